package subject

import (
	"encoding/json"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/ijson"
)

// parseOpenAI reads an assistant message, a chat completion, a Responses
// output or a bare list of output items or tool calls.
func parseOpenAI(in *input, l loc) (abi.Proposal, error) {
	var (
		actions []abi.Action
		err     error
	)
	if in.obj == nil {
		actions, err = openAIItems(in.arr, in.elems, l)
	} else {
		actions, err = openAIObject(in.obj, l)
	}
	if err != nil {
		return abi.Proposal{}, err
	}
	if len(actions) == 0 {
		return abi.Proposal{}, l.noCalls()
	}
	return abi.Proposal{Actions: actions}, nil
}

func openAIObject(o object, l loc) ([]abi.Action, error) {
	if err := checkFold(o, l, []string{"choices", "output", "tool_calls", "function_call", "role"}); err != nil {
		return nil, err
	}
	// Reading one of these and ignoring another could hide a call.
	n := 0
	for _, k := range []string{"choices", "output", "tool_calls"} {
		if o.has(k) {
			n++
		}
	}
	if n > 1 {
		return nil, l.errorf(nil, "ambiguous OpenAI shape: want one of choices, output and tool_calls")
	}
	switch {
	case o.has("choices"):
		cl := l.at("choices")
		choices, err := decodeList(o["choices"], cl, "choices")
		if err != nil {
			return nil, err
		}
		if len(choices) == 0 {
			return nil, cl.errorf(ErrNoToolCalls, "no choices: no tool calls found")
		}
		// Only the first choice is what the agent acts on; the others are
		// alternatives it was not going to run.
		cl = cl.elem(0)
		choice, err := asObject(choices[0], cl, "choice", "message")
		if err != nil {
			return nil, err
		}
		ml := cl.at("message")
		msg, err := asObject(choice["message"], ml, "message", "role", "tool_calls", "function_call")
		if err != nil {
			return nil, err
		}
		return openAIMessage(msg, ml)
	case o.has("output"):
		ol := l.at("output")
		items, err := decodeList(o["output"], ol, "output")
		if err != nil {
			return nil, err
		}
		return openAIItems(items, objects(items), ol)
	}
	return openAIMessage(o, l)
}

// openAIMessage reads the tool_calls of an assistant message.
func openAIMessage(o object, l loc) ([]abi.Action, error) {
	role, ok, err := o.str(l, "role")
	if err != nil {
		return nil, err
	}
	if ok && role != "assistant" {
		return nil, l.at("role").errorf(nil, "role %s is not assistant", quote(role))
	}
	if k := kindOf(o["function_call"]); k != 0 && k != 'n' {
		return nil, l.at("function_call").errorf(nil, "the legacy function_call is not supported; send tool_calls")
	}
	tl := l.at("tool_calls")
	if k := kindOf(o["tool_calls"]); k == 0 || k == 'n' {
		return nil, nil
	}
	calls, err := decodeList(o["tool_calls"], tl, "tool_calls")
	if err != nil {
		return nil, err
	}
	actions := make([]abi.Action, 0, len(calls))
	for i, raw := range calls {
		cl := tl.call(i)
		call, err := asObject(raw, cl, "tool call", chatCallKeys...)
		if err != nil {
			return nil, err
		}
		a, err := chatToolCall(call, cl)
		if err != nil {
			return nil, err
		}
		actions = append(actions, a)
	}
	return actions, nil
}

var chatCallKeys = []string{"id", "type", "function"}

// chatToolCall reads {"id", "type": "function", "function": {"name",
// "arguments"}}.
func chatToolCall(o object, l loc) (abi.Action, error) {
	if err := checkFold(o, l, chatCallKeys); err != nil {
		return abi.Action{}, err
	}
	// Other types (such as "custom") carry their input elsewhere; reading
	// them as functions would check the wrong thing.
	if typ, ok, err := o.str(l, "type"); err != nil {
		return abi.Action{}, err
	} else if ok && typ != "function" {
		return abi.Action{}, l.at("type").errorf(nil, "unsupported tool call type %s: want function", quote(typ))
	}
	id, _, err := o.str(l, "id")
	if err != nil {
		return abi.Action{}, err
	}
	fl := l.at("function")
	fn, err := asObject(o["function"], fl, "function", "name", "arguments")
	if err != nil {
		return abi.Action{}, err
	}
	name, err := fn.name(fl, "name")
	if err != nil {
		return abi.Action{}, err
	}
	a := abi.Action{ID: id, Type: abi.ActionToolCall, Tool: name}
	if a.Parameters, a.ParseError, err = openAIArguments(fn["arguments"], fl.at("arguments")); err != nil {
		return abi.Action{}, err
	}
	return a, nil
}

var responsesCallKeys = []string{"type", "id", "call_id", "name", "arguments"}

// openAIItems reads a list of Responses output items; chat tool calls are
// accepted in it too, so that a bare tool_calls list parses.
func openAIItems(arr []json.RawMessage, elems []object, l loc) ([]abi.Action, error) {
	actions := make([]abi.Action, 0, len(arr))
	for i, raw := range arr {
		il := l.call(i)
		o := elems[i]
		if o == nil {
			return nil, il.errorf(nil, "item must be an object, got %s", kindName(raw))
		}
		if err := checkFold(o, il, []string{"type"}); err != nil {
			return nil, err
		}
		typ, err := o.name(il, "type")
		if err != nil {
			return nil, err
		}
		var a abi.Action
		switch typ {
		case "function_call":
			a, err = responsesCall(o, il)
		case "function":
			a, err = chatToolCall(o, il)
		case "message", "reasoning":
			continue
		default:
			// Other items are calls of tools this package cannot read (or
			// results); skipping them would let them pass unchecked.
			return nil, il.at("type").errorf(nil, "unsupported item type %s: want function_call, message or reasoning", quote(typ))
		}
		if err != nil {
			return nil, err
		}
		actions = append(actions, a)
	}
	return actions, nil
}

// responsesCall reads {"type": "function_call", "call_id", "name",
// "arguments"}. call_id is what the tool's output refers to, so it is the
// action id; the item id is the fallback.
func responsesCall(o object, l loc) (abi.Action, error) {
	if err := checkFold(o, l, responsesCallKeys); err != nil {
		return abi.Action{}, err
	}
	id, ok, err := o.str(l, "call_id")
	if err != nil {
		return abi.Action{}, err
	}
	if !ok {
		if id, _, err = o.str(l, "id"); err != nil {
			return abi.Action{}, err
		}
	}
	name, err := o.name(l, "name")
	if err != nil {
		return abi.Action{}, err
	}
	a := abi.Action{ID: id, Type: abi.ActionToolCall, Tool: name}
	if a.Parameters, a.ParseError, err = openAIArguments(o["arguments"], l.at("arguments")); err != nil {
		return abi.Action{}, err
	}
	return a, nil
}

// openAIArguments decodes an arguments string, at l. What the model wrote
// there is free text, so a value that is not one JSON object is the
// action's ParseError, not an error. JSON that is not I-JSON is an error,
// as it would be anywhere else in the input: the string is JSON inside
// JSON, and its escapes reach the tool as written.
func openAIArguments(raw json.RawMessage, l loc) (params json.RawMessage, parseError string, err error) {
	switch kindOf(raw) {
	case 0, 'n':
		return emptyObject(), "", nil
	case '"':
	default:
		return nil, "arguments must be a JSON string, got " + kindName(raw), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, "arguments is not a valid JSON string: " + jsonErrText(err), nil
	}
	b := trimSpace([]byte(s))
	if len(b) == 0 {
		return emptyObject(), "", nil
	}
	if err := json.Unmarshal(b, new(json.RawMessage)); err != nil {
		return nil, "arguments is not valid JSON: " + jsonErrText(err), nil
	}
	if err := ijson.Check(b); err != nil {
		return nil, "", ijsonError(l, "the JSON in arguments", err)
	}
	// The rule on member names holds inside the string too: it reaches
	// the tool as written, and the host refuses the native call it makes.
	if err := abischema.CheckNames(b, nil); err != nil {
		return nil, "", l.errorf(err, "the JSON in arguments: %v", err)
	}
	if b[0] != '{' {
		return nil, "arguments must encode a JSON object, got " + kindName(b), nil
	}
	return json.RawMessage(b), "", nil
}
