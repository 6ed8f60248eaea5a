package sdk

import "github.com/gatehost/gatehost/abi"

// SessionGet asks what the run's session holds for the tool with canonical
// id tool: its core pin and its activation grant, if any (operation
// session.get; abi/SPEC.md §7.9).
func SessionGet(h Host, tool string) (abi.SessionGetAnswer, error) {
	return Call[abi.SessionGetAnswer](h, abi.OpSessionGet, abi.SessionGetRequest{Tool: tool})
}
