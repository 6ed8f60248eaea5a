package host

import (
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/ijson"
	"github.com/gatehost/gatehost/internal/runecut"
)

// CodeUndecodableArguments is the code of the host's own blocking finding
// for a subject it flagged as undecodable: an action of a proposal, or a
// tool_call subject, that carries parse_error (abi/SPEC.md §6.1, §6.2).
// Such a subject is never accepted, whatever the pipeline's gates say
// (§9.4): the call must not run, and a gate that never reads parameters
// (such as one that only checks the tool's name) would accept it.
const CodeUndecodableArguments = abi.CodeUndecodableArguments

// HostStage is Finding.Stage of the host's own findings. No stage can be
// named so: stage names start with a letter or a digit.
const HostStage = ""

// maxParseErrorEcho caps how much of a subject's parse_error text a host
// finding repeats: a native subject's parse_error is the caller's text.
const maxParseErrorEcho = 200

// undecodableFindings returns one CodeUndecodableArguments finding per
// undecodable part of subject, the decoded native subject of kind (as
// validateSubject decoded it). A parse_error member that is present counts,
// whatever its text, the empty string included: an executor that tests for
// the member would not run the call, so the host must not accept it.
// Subject kinds without parse_error (merge) give none.
func undecodableFindings(kind abi.SubjectKind, subject any) []Finding {
	top, _ := subject.(map[string]any)
	switch kind {
	case abi.SubjectToolCall:
		pe, ok := top["parse_error"]
		if !ok {
			return nil
		}
		id, _ := top["id"].(string)
		tool, _ := top["tool"].(string)
		return []Finding{undecodableFinding(nil, id, tool, pe)}
	case abi.SubjectProposal:
		actions, _ := top["actions"].([]any)
		var out []Finding
		for i, a := range actions {
			action, _ := a.(map[string]any)
			pe, ok := action["parse_error"]
			if !ok {
				continue
			}
			id, _ := action["id"].(string)
			tool, _ := action["tool"].(string)
			out = append(out, undecodableFinding(abi.Index(i), id, tool, pe))
		}
		return out
	}
	return nil
}

func undecodableFinding(index *int, id, tool string, parseError any) Finding {
	what := "the tool call"
	if index != nil {
		what = fmt.Sprintf("action %d", *index)
	}
	if tool != "" {
		what += fmt.Sprintf(" (%s)", clip(tool, 64))
	}
	msg := fmt.Sprintf("the host could not decode the arguments of %s; it must not run", what)
	if s, _ := parseError.(string); s != "" {
		msg += ": " + clip(s, maxParseErrorEcho)
	}
	return Finding{
		Finding: abi.Finding{
			Code:        CodeUndecodableArguments,
			Severity:    abi.Blocking,
			Tier:        abi.DecisionProcedure,
			Message:     msg,
			ActionIndex: index,
			ActionID:    id,
		},
		Stage: HostStage,
	}
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	return runecut.Cut(s, n, "…")
}

// ijsonSubjectError is the *SubjectError for an ijson.Check failure.
func ijsonSubjectError(kind abi.SubjectKind, err error) error {
	se := &SubjectError{Kind: kind, Reason: "not I-JSON (RFC 7493 §2.1)", Err: err}
	var e *ijson.Error
	if errors.As(err, &e) {
		se.Pointer = e.Pointer
	}
	return se
}
