package sdk

import "github.com/gatehost/gatehost/abi"

// CountersGet returns the counts of the accepted calls of the run's session
// and principal (abi.OpCountersGet; needs the counters capability, minor
// 8). The error wraps ErrCapabilityDenied when the stage lacks the grant,
// and is a *CallError with code "unavailable" when the host's counters
// store failed: a gate must then not decide as if every count were 0.
func CountersGet(h Host) (abi.CountersGetAnswer, error) {
	return Call[abi.CountersGetAnswer](h, abi.OpCountersGet, abi.CountersGetRequest{})
}
