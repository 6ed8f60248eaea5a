package sdk

import "github.com/gatehost/gatehost/abi"

// SessionGet asks what the run's session holds for the tool with canonical
// id tool: its core pin and its activation grant, if any (operation
// session.get; abi/SPEC.md §7.9).
//
// In a module, the SDK remembers the answers of a run granted the session,
// keyed by the run's session digest (context.session_digest, minor 10)
// and the tool: the digest names the content of the session set the host
// answers from, so a warm instance asks the host only for tools it has not
// looked up in a set of that content. A set changed in any way (a tool
// activated or revoked, the session made again) has another digest. A run
// without a well-formed digest is always asked about. Errors are never
// remembered.
func SessionGet(h Host, tool string) (abi.SessionGetAnswer, error) {
	var digest string
	if pr, ok := h.(pinnedRun); ok {
		digest = pr.pins().session
	}
	if digest != "" {
		if a, ok := sessionAnswers.get(digest, tool); ok {
			return copySessionAnswer(a), nil
		}
	}
	a, err := Call[abi.SessionGetAnswer](h, abi.OpSessionGet, abi.SessionGetRequest{Tool: tool})
	if digest != "" && err == nil {
		sessionAnswers.put(digest, tool, copySessionAnswer(a))
	}
	return a, err
}

// sessionAnswers remembers session.get answers of one session digest by
// tool, at most 1024. They are copied in and out, so that a gate changing
// the pin or grant it was given changes nothing the next run sees.
var sessionAnswers = newSessionCache()

func newSessionCache() *digestCache[abi.SessionGetAnswer] {
	return &digestCache[abi.SessionGetAnswer]{max: 1024}
}

func copySessionAnswer(a abi.SessionGetAnswer) abi.SessionGetAnswer {
	if a.Core != nil {
		p := *a.Core
		a.Core = &p
	}
	if a.Activation != nil {
		act := *a.Activation
		a.Activation = &act
	}
	return a
}
