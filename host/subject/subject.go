// Package subject turns the shapes agents emit into the native abi.Proposal.
//
// It is the host's edge for untrusted input. ParseProposal accepts the native
// {"actions": [...]} form and three agent formats, detects which one it was
// given, validates it and returns one normalized proposal. The formats are
// described on the Format constants.
//
// Rules shared by all formats:
//
//   - The input is one JSON value of at most Parser.MaxBytes bytes of UTF-8
//     (DefaultMaxBytes for ParseProposal and ParseToolCall), with no list
//     longer than MaxActions.
//   - Something wrong with the envelope (the message, the list, a call's
//     name or id) is an *Error: the whole input is refused.
//   - Something wrong with one call's arguments is not an error. The action
//     keeps its tool and id, Parameters is absent and ParseError says why,
//     so that a gate can report it against that action (and block it).
//   - Parameters keep the agent's bytes; only OpenAI's arguments string is
//     decoded (and trimmed of surrounding white space). In the agent formats
//     a call without arguments gets {}.
//   - An element that might be a call but is not understood is an error,
//     never skipped: a skipped call would escape every gate.
//   - Object keys are matched exactly. A key that equals one this package
//     reads only under case folding ("Tool" for "tool") is an error, because
//     Go's encoding/json would take it for the field while other decoders
//     would not; the gates and the executor must see the same call.
//   - An agent format with no tool calls is an error wrapping
//     ErrNoToolCalls; a native proposal with no actions is valid.
//
// ParseProposal never panics, whatever the input.
package subject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/ijson"
	"github.com/gatehost/gatehost/internal/jsonptr"

	"github.com/gatehost/gatehost/abi"
)

// DefaultMaxBytes caps the input of ParseProposal and ParseToolCall. A
// caller with its own limit (the host, with Config.MaxSubjectBytes) sets
// Parser.MaxBytes instead, so that one limit applies.
const DefaultMaxBytes = 4 << 20

// Parser reads the formats within a size limit. The zero value is the
// parser of ParseProposal and ParseToolCall.
type Parser struct {
	// MaxBytes caps the input, in bytes; 0 or less means DefaultMaxBytes.
	// A larger input is an *Error wrapping ErrTooLarge.
	MaxBytes int
}

func (ps Parser) maxBytes() int {
	if ps.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return ps.MaxBytes
}

// MaxActions caps the length of each list ParseProposal reads: actions,
// requests, choices, tool calls, output items and content blocks. Within
// the byte limit a list of tiny elements would otherwise decode to gigabytes
// of structs, long before any gate could apply its own limit.
const MaxActions = 1000

// Format names a shape of proposal.
type Format string

const (
	// FormatAuto asks ParseProposal to detect the format from the content.
	FormatAuto Format = ""

	// FormatNative is abi.Proposal as JSON: {"actions": [...], ...}. It is
	// validated against abi.SchemaProposal; fields the schema does not name
	// are allowed and dropped. Zero actions is a valid proposal.
	FormatNative Format = "native"

	// FormatMCP is a JSON array of MCP JSON-RPC requests, or one request:
	// {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
	// "params": {"name": ..., "arguments": {...}}}. Every element must be a
	// tools/call request; its id (a string or an integer, required) becomes
	// the action id as a string, and absent or null arguments become {}.
	FormatMCP Format = "mcp"

	// FormatOpenAI is one of:
	//   - an assistant message {"role": "assistant", "tool_calls": [{"id",
	//     "type": "function", "function": {"name", "arguments"}}]};
	//   - a chat completion {"choices": [{"message": {...}}]}, of which only
	//     the first choice is read;
	//   - a Responses API output, {"output": [...]} or the bare list, whose
	//     {"type": "function_call", "call_id", "name", "arguments"} items
	//     become actions and "message" and "reasoning" items are skipped;
	//   - a bare tool_calls list.
	//
	// arguments is a JSON string holding a JSON object. Absent or null
	// arguments and an empty string become {}; anything else that is not an
	// object sets the action's ParseError. The legacy message-level
	// function_call is refused.
	FormatOpenAI Format = "openai"

	// FormatAnthropic is an assistant message {"role": "assistant",
	// "content": [...]} or its bare content list. Each {"type": "tool_use",
	// "id", "name", "input": {...}} block becomes an action; "text",
	// "thinking" and "redacted_thinking" blocks are skipped; any other block
	// type is an error. An input that is not an object sets ParseError.
	FormatAnthropic Format = "anthropic"
)

// ErrTooLarge is wrapped by the *Error for an input over the byte limit or
// with a list over MaxActions.
var ErrTooLarge = errors.New("subject: input too large")

// ErrNoToolCalls is wrapped by the *Error for an agent message that holds no
// tool call, such as a text-only answer. Callers may treat it as "nothing to
// check" rather than as malformed input.
var ErrNoToolCalls = errors.New("subject: no tool calls found")

// ErrNotIJSON is wrapped by the *Error for input that is not I-JSON (RFC
// 7493 §2.1): a string or member name, anywhere in the input or in the
// JSON inside an OpenAI arguments string, with an escaped lone surrogate
// ("\ud800", "\udc00", a high surrogate not followed by a low one). Go
// reads such a string as U+FFFD where Python or JavaScript keep the
// surrogate, so a gate and the tool could disagree on a value. Field points
// to the offending value (to the object, for a member name). Invalid UTF-8
// is refused too, with the same error or, for the whole input, as "input is
// not valid UTF-8".
var ErrNotIJSON = ijson.ErrNotIJSON

// Error is the error ParseProposal returns for input it refuses.
type Error struct {
	// Format is the format being parsed; FormatAuto if none was determined.
	Format Format
	// Index is the position of the offending call in its list (actions,
	// JSON-RPC requests, tool_calls, output items or content blocks), or -1
	// when the error is not about one call.
	Index int
	// Field is a JSON Pointer (RFC 6901) into the input to the offending
	// value; "" means the whole input.
	Field string
	// Reason says what is wrong, for people. It names members and types, not
	// the values of arguments, which may be secret.
	Reason string
	// Err is the underlying error, if any: ErrTooLarge, ErrNoToolCalls,
	// ErrNotIJSON or an encoding/json error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("subject")
	if e.Format != FormatAuto {
		b.WriteString(" " + string(e.Format))
	}
	if e.Index >= 0 {
		b.WriteString(" [" + strconv.Itoa(e.Index) + "]")
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ParseProposal parses data in format f, or in the detected format if f is
// FormatAuto, and returns the proposal and the format used. It is
// Parser{}.Proposal: the input is capped at DefaultMaxBytes.
//
// Detection looks at marker members: "actions" (native), "jsonrpc" or
// "method" (MCP), "tool_calls", "choices" or an "output" list (OpenAI), a
// "content" list (Anthropic), and for a list the same markers or the "type"
// of its elements. Markers of two formats are an error rather than a guess,
// since the parser of one would ignore what the other calls a tool call. A
// forced format that detection says the content is not is an error too.
//
// Every error is an *Error, and the returned Format is then its Format.
func ParseProposal(data []byte, f Format) (abi.Proposal, Format, error) {
	return Parser{}.Proposal(data, f)
}

// Proposal is ParseProposal with the parser's byte limit.
func (ps Parser) Proposal(data []byte, f Format) (abi.Proposal, Format, error) {
	in, got, err := ps.prepare(data, f)
	if err != nil {
		return abi.Proposal{}, got, err
	}
	p, err := parseAs(data, in, got)
	if err != nil {
		return abi.Proposal{}, got, err
	}
	if err := checkNames(data, got); err != nil {
		return abi.Proposal{}, got, err
	}
	return p, got, nil
}

// Native returns data, a subject of kind (abi.SubjectProposal or
// abi.SubjectToolCall) in format f or, for FormatAuto, the detected one, as
// the native JSON of kind, and the format used.
//
// A native input is detected, not validated: it is returned as given, for
// the caller to validate against the ABI's schema of kind. This is the
// host's path: each subject is then decoded and validated once, by the
// host, and a native subject reaches the gates as its author wrote it. An
// input in an agent format is read as Proposal or ToolCall reads it and
// returned as the encoding/json encoding of the abi.Proposal or
// abi.ToolCall. Errors are *Error values; another kind is one too.
func (ps Parser) Native(data []byte, kind abi.SubjectKind, f Format) ([]byte, Format, error) {
	switch kind {
	case abi.SubjectProposal:
		in, got, err := ps.prepare(data, f)
		if err != nil || got == FormatNative {
			return data, got, err
		}
		p, err := parseAs(data, in, got)
		if err == nil {
			err = checkNames(data, got)
		}
		if err != nil {
			return nil, got, err
		}
		b, err := json.Marshal(p)
		return b, got, err
	case abi.SubjectToolCall:
		call, got, asIs, err := ps.toolCall(data, f, true)
		if err != nil || asIs {
			return data, got, err
		}
		b, err := json.Marshal(call)
		return b, got, err
	}
	return nil, f, &Error{Format: f, Index: -1, Reason: fmt.Sprintf("%s subjects have no agent formats", quote(string(kind)))}
}

// checkNames refuses a member name twice in one object, exactly or under
// case folding, which different parsers read differently: the gate could
// check one tool while the executor runs another. (Case variants of known
// fields are reported with their field by the format's parser.)
func checkNames(data []byte, f Format) error {
	if err := abischema.CheckNames(data, nil); err != nil {
		return &Error{Format: f, Index: -1, Reason: err.Error(), Err: err}
	}
	return nil
}

// prepare applies the rules every format shares to data and determines its
// format: f, checked against the content, or the detected one.
func (ps Parser) prepare(data []byte, f Format) (*input, Format, error) {
	whole := loc{format: f, index: -1}
	if err := ps.precheck(data, whole); err != nil {
		return nil, f, err
	}
	in, err := decodeInput(data, whole)
	if err != nil {
		return nil, f, err
	}
	detected, derr := detect(in)
	switch {
	case f == FormatAuto && derr != nil:
		return nil, f, derr
	case f == FormatAuto:
		f = detected
	case derr == nil && detected != f:
		return nil, f, whole.errorf(nil, "input looks like %s, not %s", detected, f)
	}
	return in, f, nil
}

// precheck refuses an unknown format, an input over the byte limit and
// one that is not UTF-8; whole is the location of the whole input.
func (ps Parser) precheck(data []byte, whole loc) error {
	switch whole.format {
	case FormatAuto, FormatNative, FormatMCP, FormatOpenAI, FormatAnthropic:
	default:
		return whole.errorf(nil, "unknown format %s", quote(string(whole.format)))
	}
	if max := ps.maxBytes(); len(data) > max {
		return whole.errorf(ErrTooLarge, "input is %d bytes, over the limit of %d", len(data), max)
	}
	// Invalid UTF-8 would be silently replaced in decoded strings but kept
	// in raw parameters, so gates and tools could read different text.
	if !utf8.Valid(data) {
		return whole.errorf(nil, "input is not valid UTF-8")
	}
	return nil
}

// parseAs reads in, the decoded data, as a proposal in format f.
func parseAs(data []byte, in *input, f Format) (abi.Proposal, error) {
	l := loc{format: f, index: -1}
	switch f {
	case FormatNative:
		return parseNative(data, in, l)
	case FormatMCP:
		return parseMCP(in, l)
	case FormatOpenAI:
		return parseOpenAI(in, l)
	}
	return parseAnthropic(in, l)
}

// input is the decoded top level: an object or an array of (maybe) objects,
// with values still raw so that parameters keep their bytes.
type input struct {
	obj   object            // set if the input is an object
	arr   []json.RawMessage // set if the input is an array
	elems []object          // elems[i] is arr[i] as an object, nil if it is not one
}

func decodeInput(data []byte, l loc) (*input, error) {
	in := &input{}
	var err error
	switch kindOf(data) {
	case '{':
		err = json.Unmarshal(data, &in.obj)
	case '[':
		if in.arr, err = decodeList(data, l, "input"); err != nil {
			return nil, err
		}
		in.elems = objects(in.arr)
	case 0:
		return nil, l.errorf(nil, "input is empty")
	default:
		// Run the decoder anyway so that invalid JSON is reported as such.
		var v json.RawMessage
		if err = json.Unmarshal(data, &v); err == nil {
			return nil, l.errorf(nil, "input is a JSON %s, want an object or an array", kindName(data))
		}
	}
	if err != nil {
		return nil, l.errorf(err, "invalid JSON: %s", jsonErrText(err))
	}
	// Checked once here, for every format: the raw parameters passed on
	// keep the agent's escapes, which each reader decodes its own way.
	if err := ijson.Check(data); err != nil {
		return nil, ijsonError(l, "", err)
	}
	return in, nil
}

// ijsonError is the *Error for an ijson.Check failure at l. inner names
// the document checked when it is not the input itself, such as the JSON
// inside an arguments string: the pointer is then into that document.
func ijsonError(l loc, inner string, err error) *Error {
	var e *ijson.Error
	if !errors.As(err, &e) {
		return l.errorf(err, "%v", err)
	}
	what := "string"
	if e.Name {
		what = "member name"
	}
	if inner == "" {
		l.ptr += e.Pointer
		if e.Name {
			what = "a member name of the object"
		} else {
			what = "the string"
		}
		return l.errorf(err, "%s is not I-JSON (RFC 7493 §2.1): %v %s at offset %d", what, e.Err, e.Detail, e.Offset)
	}
	where := ""
	if e.Pointer != "" {
		where = " at " + e.Pointer
	}
	if e.Name {
		where = " in the object" + where
	}
	return l.errorf(err, "%s: a %s%s is not I-JSON (RFC 7493 §2.1): %v %s at offset %d", inner, what, where, e.Err, e.Detail, e.Offset)
}

// detect names the format of in from marker keys. Markers of more than one
// format are an error rather than a guess: whatever the parser ignored could
// be a call that no gate would see.
func detect(in *input) (Format, error) {
	l := loc{index: -1}
	var found []Format
	add := func(f Format) {
		for _, g := range found {
			if g == f {
				return
			}
		}
		found = append(found, f)
	}
	if in.obj != nil {
		o := in.obj
		if o.has("actions") {
			add(FormatNative)
		}
		if o.has("jsonrpc") || o.has("method") {
			add(FormatMCP)
		}
		openai := o.has("tool_calls") || o.has("function_call") || o.has("choices") || kindOf(o["output"]) == '['
		content := kindOf(o["content"]) == '['
		if openai {
			add(FormatOpenAI)
		}
		if content && (!openai || hasToolUse(o["content"])) {
			add(FormatAnthropic)
		}
		// {"role": ..., "content": "text"} is a text-only message in both
		// agent formats.
		if len(found) == 0 && o.has("role") {
			return "", l.noCalls()
		}
	} else {
		if len(in.arr) == 0 {
			return "", l.errorf(ErrNoToolCalls, "empty list: no tool calls found")
		}
		for _, e := range in.elems {
			if f := elemFormat(e); f != FormatAuto {
				add(f)
			}
		}
	}
	switch len(found) {
	case 0:
		return "", l.errorf(nil, "unrecognized format: not a native proposal, MCP tools/call request, OpenAI or Anthropic message")
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = string(f)
	}
	return "", l.errorf(nil, "ambiguous format: input has markers of %s", strings.Join(names, " and "))
}

// elemFormat names the format an element of a top-level list belongs to.
func elemFormat(e object) Format {
	if e == nil {
		return FormatAuto
	}
	if e.has("jsonrpc") || e.has("method") {
		return FormatMCP
	}
	var typ string
	if json.Unmarshal(e["type"], &typ) != nil {
		return FormatAuto
	}
	switch typ {
	case "tool_use", "text", "thinking", "redacted_thinking":
		return FormatAnthropic
	case "function_call", "function", "message", "reasoning":
		return FormatOpenAI
	}
	return FormatAuto
}

func hasToolUse(content json.RawMessage) bool {
	if countElems(content, MaxActions) > MaxActions {
		return true // unread, so it may hold one
	}
	var blocks []struct {
		Type string `json:"type"`
	}
	// Errors leave blocks as decoded so far; detection is best effort.
	_ = json.Unmarshal(content, &blocks)
	for _, b := range blocks {
		if b.Type == "tool_use" {
			return true
		}
	}
	return false
}

// loc is where in the input a parser is: it builds *Error values.
type loc struct {
	format Format
	index  int
	ptr    string
}

// at descends into an object member.
func (l loc) at(key string) loc {
	l.ptr = jsonptr.Append(l.ptr, key)
	return l
}

// elem descends into an array element that is not a call.
func (l loc) elem(i int) loc {
	l.ptr += "/" + strconv.Itoa(i)
	return l
}

// call descends into the array element that is call i.
func (l loc) call(i int) loc {
	l = l.elem(i)
	l.index = i
	return l
}

func (l loc) errorf(err error, format string, args ...any) *Error {
	return &Error{Format: l.format, Index: l.index, Field: l.ptr, Reason: fmt.Sprintf(format, args...), Err: err}
}

// noCalls is the error for an agent message without tool calls.
func (l loc) noCalls() *Error {
	return l.errorf(ErrNoToolCalls, "no tool calls found")
}

// jsonErrText is an encoding/json error without its "json: " prefix, with
// the offset of a syntax error.
func jsonErrText(err error) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg += " at offset " + strconv.FormatInt(se.Offset, 10)
	}
	return msg
}

// emptyObject is the parameters of a call without arguments. Each action
// gets its own copy so that no caller can alias another's parameters.
func emptyObject() json.RawMessage { return json.RawMessage("{}") }

// trimSpace trims JSON white space.
func trimSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }
