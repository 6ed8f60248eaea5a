// Package agentinput converts an agent's input — a tool call or a proposal
// in any format package subject reads (native, MCP, OpenAI, Anthropic) —
// to the native JSON of a pipeline's subject kind, for the CLI and the
// HTTP server alike.
package agentinput

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/subject"
)

// Native converts body, in format f (subject.FormatAuto detects it), to
// the native JSON of kind. For a tool call, toolName is the name the call
// names its tool by. field is a JSON Pointer into body (or "format") naming
// what an error is about; errors from package subject are *subject.Error.
// Kinds other than proposal and tool_call take their native JSON only.
func Native(kind abi.SubjectKind, body []byte, f subject.Format) (native []byte, toolName, field string, err error) {
	switch kind {
	case abi.SubjectToolCall:
		call, _, err := subject.ParseToolCall(body, f)
		if err != nil {
			return nil, "", Field(err), err
		}
		native, err = json.Marshal(call)
		return native, call.Tool, "", err
	case abi.SubjectProposal:
		p, _, err := subject.ParseProposal(body, f)
		if err != nil {
			return nil, "", Field(err), err
		}
		native, err = json.Marshal(p)
		return native, "", "", err
	}
	if f != subject.FormatAuto && f != subject.FormatNative {
		return nil, "", "format", fmt.Errorf("%s applies to proposals and tool calls only", f)
	}
	return body, "", "", nil
}

// Field is the JSON Pointer a *subject.Error names, or "".
func Field(err error) string {
	var se *subject.Error
	if errors.As(err, &se) {
		return se.Field
	}
	return ""
}
