package host

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/ijson"
	"github.com/gatehost/gatehost/internal/runecut"
	"github.com/gatehost/gatehost/internal/schemafind"
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

var (
	subjectSchemas = map[abi.SubjectKind]string{abi.SubjectProposal: abi.SchemaProposal, abi.SubjectToolCall: abi.SchemaToolCall, abi.SubjectMerge: abi.SchemaMerge}
	subjectStructs = map[abi.SubjectKind]abischema.Structs{abi.SubjectProposal: abischema.ProposalStructs, abi.SubjectToolCall: abischema.ToolCallStructs, abi.SubjectMerge: abischema.MergeStructs}
)

// hasAgentFormats: subjects of kind may come in an agent's format.
func hasAgentFormats(kind abi.SubjectKind) bool {
	return kind == abi.SubjectProposal || kind == abi.SubjectToolCall
}

// decodeSubject reads input, a subject of p's kind in format f, and returns
// the native subject and its decoded value (numbers as json.Number). When
// input is not a subject of p's kind but is a valid one of another kind,
// the *SubjectError says so (ErrSubjectKind).
func (h *Host) decodeSubject(p *pipeline, input []byte, f subject.Format) ([]byte, any, error) {
	kind := p.cfg.Subject
	native, v, err := decodeAs(kind, input, f, h.cfg.MaxSubjectBytes)
	if err == nil {
		return native, v, nil
	}
	// The error path only: is it a subject of another kind?
	for _, other := range []abi.SubjectKind{abi.SubjectToolCall, abi.SubjectProposal, abi.SubjectMerge} {
		if other == kind || (f != subject.FormatAuto && f != subject.FormatNative && !hasAgentFormats(other)) {
			continue
		}
		if _, _, oerr := decodeAs(other, input, f, h.cfg.MaxSubjectBytes); oerr == nil {
			return nil, nil, kindMismatch(p, other)
		}
	}
	return nil, nil, err
}

// kindMismatch is the *SubjectError for a valid subject of kind looks sent
// to p.
func kindMismatch(p *pipeline, looks abi.SubjectKind) *SubjectError {
	return &SubjectError{Kind: p.cfg.Subject, Looks: looks,
		Reason: fmt.Sprintf("pipeline %s checks %s; this looks like %s", p.name, kindNoun(p.cfg.Subject, true), kindNoun(looks, false))}
}

// kindNoun names subjects of kind for people: "proposals" or "a proposal".
func kindNoun(kind abi.SubjectKind, plural bool) string {
	noun := map[abi.SubjectKind]string{abi.SubjectProposal: "proposal", abi.SubjectToolCall: "tool call", abi.SubjectMerge: "merge subject"}[kind]
	if noun == "" {
		noun = string(kind) + " subject"
	}
	if plural {
		return noun + "s"
	}
	return "a " + noun
}

// decodeAs reads input as a subject of kind in format f, within maxBytes:
// an agent's format is converted by host/subject, and the native subject
// is validated once, by validateSubject.
func decodeAs(kind abi.SubjectKind, input []byte, f subject.Format, maxBytes int) ([]byte, any, error) {
	// The one limit, before any decoding, whatever the format.
	if len(input) > maxBytes {
		return nil, nil, tooLarge(kind, len(input), maxBytes)
	}
	// Bytes that are not UTF-8 are refused with where they are, whatever
	// the format (host/subject reports the input as a whole).
	if !utf8.Valid(input) {
		if err := ijson.Check(input); errors.Is(err, ErrNotIJSON) {
			return nil, nil, ijsonSubjectError(kind, err)
		}
	}
	native := input
	if hasAgentFormats(kind) && f != subject.FormatNative {
		var err error
		native, _, err = subject.Parser{MaxBytes: maxBytes}.Native(input, kind, f)
		if err != nil {
			se := &SubjectError{Kind: kind, Reason: "cannot read the input", Err: err}
			var pe *subject.Error
			if errors.As(err, &pe) {
				se.Pointer = pe.Field
			}
			return nil, nil, se
		}
	}
	v, err := validateSubject(kind, native, maxBytes)
	return native, v, err
}

func tooLarge(kind abi.SubjectKind, n, maxBytes int) *SubjectError {
	return &SubjectError{Kind: kind, Reason: fmt.Sprintf("%d bytes exceeds the cap of %d (Config.MaxSubjectBytes)", n, maxBytes)}
}

// validateSubject refuses a subject that is not a valid native subject of
// kind and returns it decoded (numbers as json.Number).
func validateSubject(kind abi.SubjectKind, subject []byte, maxBytes int) (any, error) {
	if len(subject) > maxBytes {
		return nil, tooLarge(kind, len(subject), maxBytes) // a conversion that grew past it
	}
	v, err := abischema.Decode(subject)
	if err != nil {
		return nil, &SubjectError{Kind: kind, Reason: "not JSON", Err: err}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, &SubjectError{Kind: kind, Reason: "not a JSON object"}
	}
	// Readers decode lone surrogates and bad bytes differently; the gates
	// and the executor must read one value (RFC 7493 §2.1).
	if err := ijson.Check(subject); err != nil {
		return nil, ijsonSubjectError(kind, err)
	}
	// Every reader of the subject (schema, gates, the executor) must see
	// the same members: no duplicate or case-variant names.
	if err := abischema.CheckNames(subject, subjectStructs[kind]); err != nil {
		return nil, &SubjectError{Kind: kind, Reason: "ambiguous member names", Err: err}
	}
	if schema := subjectSchemas[kind]; schema != "" {
		if err := abischema.ValidateValue(schema, v); err != nil { // decoded once, above
			return nil, &SubjectError{Kind: kind, Reason: "does not match the " + string(kind) + " schema", Pointer: schemaPointer(err), Err: err}
		}
	}
	return v, nil
}

// schemaPointer is the JSON Pointer of the first violation of a schema
// validation error (in schemafind.Violations' order), or "" when it has
// none.
func schemaPointer(err error) string {
	var ve *schemafind.ValidationError
	if !errors.As(err, &ve) {
		return ""
	}
	return ve.Violations[0].Pointer
}
