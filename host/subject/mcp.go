package subject

import (
	"regexp"

	"github.com/gatehost/gatehost/abi"
)

// parseMCP reads a list of tools/call requests, or a single one.
func parseMCP(in *input, l loc) (abi.Proposal, error) {
	p := abi.Proposal{Actions: []abi.Action{}}
	if in.obj != nil {
		l.index = 0
		a, err := mcpCall(in.obj, l)
		if err != nil {
			return abi.Proposal{}, err
		}
		p.Actions = append(p.Actions, a)
		return p, nil
	}
	for i, raw := range in.arr {
		cl := l.call(i)
		if in.elems[i] == nil {
			return abi.Proposal{}, cl.errorf(nil, "request must be an object, got %s", kindName(raw))
		}
		a, err := mcpCall(in.elems[i], cl)
		if err != nil {
			return abi.Proposal{}, err
		}
		p.Actions = append(p.Actions, a)
	}
	if len(p.Actions) == 0 {
		return abi.Proposal{}, l.noCalls()
	}
	return p, nil
}

// jsonInteger matches the integers MCP allows as a request id.
var jsonInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// mcpCall converts one request. id is required because a request without
// one is a notification, which no server answers with a tool result.
func mcpCall(o object, l loc) (abi.Action, error) {
	if err := checkFold(o, l, []string{"jsonrpc", "id", "method", "params"}); err != nil {
		return abi.Action{}, err
	}
	if v, _, err := o.str(l, "jsonrpc"); err != nil {
		return abi.Action{}, err
	} else if v != "2.0" {
		return abi.Action{}, l.at("jsonrpc").errorf(nil, `jsonrpc must be "2.0"`)
	}
	method, err := o.name(l, "method")
	if err != nil {
		return abi.Action{}, err
	}
	if method != "tools/call" {
		return abi.Action{}, l.at("method").errorf(nil, "method %s is not tools/call", quote(method))
	}

	var id string
	switch raw := trimSpace(o["id"]); kindOf(raw) {
	case '"':
		id, _, err = o.str(l, "id")
		if err != nil {
			return abi.Action{}, err
		}
	case 0:
		return abi.Action{}, l.at("id").errorf(nil, "id is required")
	default:
		if !jsonInteger.Match(raw) {
			return abi.Action{}, l.at("id").errorf(nil, "id must be a string or an integer, got %s", kindName(raw))
		}
		id = string(raw)
	}

	pl := l.at("params")
	params, err := asObject(o["params"], pl, "params", "name", "arguments")
	if err != nil {
		return abi.Action{}, err
	}
	name, err := params.name(pl, "name")
	if err != nil {
		return abi.Action{}, err
	}
	a := abi.Action{ID: id, Type: abi.ActionToolCall, Tool: name}
	switch args := params["arguments"]; kindOf(args) {
	case 0, 'n':
		a.Parameters = emptyObject()
	case '{':
		a.Parameters = args
	default:
		a.ParseError = "arguments must be a JSON object, got " + kindName(args)
	}
	return a, nil
}
