package subject

import "github.com/gatehost/gatehost/abi"

// ParseToolCall parses one tool call, the subject of a tool_call pipeline,
// in format f or, for FormatAuto, the detected format, and returns it in
// the native shape abi.ToolCall with the format used.
//
// Accepted shapes:
//
//   - native: {"tool", "id"?, "parameters"?, "parse_error"?} (abi.ToolCall);
//   - mcp: the params of a tools/call request, {"name", "arguments"?,
//     "_meta"?}, or the whole JSON-RPC request, as ParseProposal reads it;
//   - openai: one Chat Completions tool call {"id", "type": "function",
//     "function": {"name", "arguments"}} or one Responses item
//     {"type": "function_call", "call_id", "name", "arguments"};
//   - anthropic: one {"type": "tool_use", "id", "name", "input"} block.
//
// Any other input that ParseProposal reads (an assistant message, a chat
// completion, a list) is accepted when it holds exactly one tool call; more
// than one is an error, since a tool_call pipeline checks a single call.
// Errors are *Error values as for ParseProposal; arguments are never echoed.
// ParseToolCall never panics.
//
// ParseToolCall is Parser{}.ToolCall: the input is capped at
// DefaultMaxBytes.
func ParseToolCall(data []byte, f Format) (abi.ToolCall, Format, error) {
	return Parser{}.ToolCall(data, f)
}

// ToolCall is ParseToolCall with the parser's byte limit.
func (ps Parser) ToolCall(data []byte, f Format) (abi.ToolCall, Format, error) {
	call, got, _, err := ps.toolCall(data, f, false)
	return call, got, err
}

// toolCall reads data as ToolCall does. With keepNative, an input in the
// native shape is only detected: asIs reports it, and call is zero.
func (ps Parser) toolCall(data []byte, f Format, keepNative bool) (call abi.ToolCall, got Format, asIs bool, err error) {
	whole := loc{format: f, index: -1}
	if err := ps.precheck(data, whole); err != nil {
		return abi.ToolCall{}, f, false, err
	}
	if kindOf(data) == '{' {
		in, err := decodeInput(data, whole)
		if err != nil {
			return abi.ToolCall{}, f, false, err
		}
		if sf, ok := singleFormat(in.obj); ok && (f == FormatAuto || f == sf) {
			if keepNative && sf == FormatNative {
				return abi.ToolCall{}, sf, true, nil
			}
			a, err := singleCall(in.obj, sf)
			if err == nil {
				err = checkNames(data, sf)
			}
			if err != nil {
				return abi.ToolCall{}, sf, false, err
			}
			return toolCall(a), sf, false, nil
		}
	}
	p, pf, err := ps.Proposal(data, f)
	if err != nil {
		return abi.ToolCall{}, pf, false, err
	}
	l := loc{format: pf, index: -1}
	if len(p.Actions) != 1 {
		return abi.ToolCall{}, pf, false, l.errorf(nil, "holds %d tool calls; a tool_call subject is exactly one", len(p.Actions))
	}
	a := p.Actions[0]
	if a.Type != "" && a.Type != abi.ActionToolCall {
		return abi.ToolCall{}, pf, false, l.errorf(nil, "the action is a %s, not a tool call", quote(a.Type))
	}
	if a.Tool == "" {
		return abi.ToolCall{}, pf, false, l.at("actions").elem(0).at("tool").errorf(nil, "tool is required")
	}
	return toolCall(a), pf, false, nil
}

// singleFormat recognises the single-call shapes ParseProposal does not
// read on their own.
func singleFormat(o object) (Format, bool) {
	if o.has("tool") && !o.has("actions") && !o.has("name") && !o.has("jsonrpc") && !o.has("method") {
		return FormatNative, true
	}
	if o.has("name") && !o.has("type") && !o.has("jsonrpc") && !o.has("method") && !o.has("tool") &&
		!o.has("input") && !o.has("function") && !o.has("parameters") {
		return FormatMCP, true
	}
	var typ string
	if s, ok, err := o.str(loc{index: -1}, "type"); err == nil && ok {
		typ = s
	}
	switch typ {
	case "function", "function_call":
		return FormatOpenAI, true
	case "tool_use":
		return FormatAnthropic, true
	}
	return FormatAuto, false
}

func singleCall(o object, f Format) (abi.Action, error) {
	l := loc{format: f, index: -1}
	switch f {
	case FormatNative:
		return nativeCall(o, l)
	case FormatMCP:
		return mcpParams(o, l)
	case FormatOpenAI:
		if typ, _, _ := o.str(l, "type"); typ == "function_call" {
			return responsesCall(o, l)
		}
		if err := checkFold(o, l, chatCallKeys); err != nil {
			return abi.Action{}, err
		}
		return chatToolCall(o, l)
	}
	return toolUseBlock(o, l)
}

// toolUseBlock reads one {"type": "tool_use", "id", "name", "input"} block.
func toolUseBlock(o object, l loc) (abi.Action, error) {
	if err := checkFold(o, l, toolUseKeys); err != nil {
		return abi.Action{}, err
	}
	id, _, err := o.str(l, "id")
	if err != nil {
		return abi.Action{}, err
	}
	name, err := o.name(l, "name")
	if err != nil {
		return abi.Action{}, err
	}
	a := abi.Action{ID: id, Type: abi.ActionToolCall, Tool: name}
	// The API always sends input; its absence is as wrong as a non-object.
	switch input := o["input"]; kindOf(input) {
	case '{':
		a.Parameters = input
	case 0:
		a.ParseError = "input is missing"
	default:
		a.ParseError = "input must be a JSON object, got " + kindName(input)
	}
	return a, nil
}

var nativeCallKeys = []string{"id", "tool", "parameters", "parse_error"}

// nativeCall reads abi.ToolCall's JSON.
func nativeCall(o object, l loc) (abi.Action, error) {
	if err := checkFold(o, l, nativeCallKeys); err != nil {
		return abi.Action{}, err
	}
	id, _, err := o.str(l, "id")
	if err != nil {
		return abi.Action{}, err
	}
	tool, err := o.name(l, "tool")
	if err != nil {
		return abi.Action{}, err
	}
	pe, _, err := o.str(l, "parse_error")
	if err != nil {
		return abi.Action{}, err
	}
	a := abi.Action{ID: id, Type: abi.ActionToolCall, Tool: tool, ParseError: pe}
	switch params := o["parameters"]; kindOf(params) {
	case 0:
	case '{':
		if pe == "" {
			a.Parameters = params
		}
	default:
		return abi.Action{}, l.at("parameters").errorf(nil, "parameters must be an object, got %s", kindName(params))
	}
	return a, nil
}

// mcpParams reads the params of a tools/call request.
func mcpParams(o object, l loc) (abi.Action, error) {
	if err := checkFold(o, l, []string{"name", "arguments", "_meta"}); err != nil {
		return abi.Action{}, err
	}
	name, err := o.name(l, "name")
	if err != nil {
		return abi.Action{}, err
	}
	a := abi.Action{Type: abi.ActionToolCall, Tool: name}
	switch args := o["arguments"]; kindOf(args) {
	case 0, 'n':
		a.Parameters = emptyObject()
	case '{':
		a.Parameters = args
	default:
		a.ParseError = "arguments must be a JSON object, got " + kindName(args)
	}
	return a, nil
}

func toolCall(a abi.Action) abi.ToolCall {
	return abi.ToolCall{ID: a.ID, Tool: a.Tool, Parameters: a.Parameters, ParseError: a.ParseError}
}
