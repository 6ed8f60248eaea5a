package subject

import (
	"github.com/gatehost/gatehost/abi"
)

var toolUseKeys = []string{"type", "id", "name", "input"}

// parseAnthropic reads an assistant message or its bare content list.
func parseAnthropic(in *input, l loc) (abi.Proposal, error) {
	blocks, elems, bl := in.arr, in.elems, l
	if in.obj != nil {
		o := in.obj
		if err := checkFold(o, l, []string{"role", "content"}); err != nil {
			return abi.Proposal{}, err
		}
		role, ok, err := o.str(l, "role")
		if err != nil {
			return abi.Proposal{}, err
		}
		if ok && role != "assistant" {
			return abi.Proposal{}, l.at("role").errorf(nil, "role %s is not assistant", quote(role))
		}
		bl = l.at("content")
		if kindOf(o["content"]) == '"' {
			// The string form of content is text only.
			return abi.Proposal{}, l.noCalls()
		}
		if blocks, err = decodeList(o["content"], bl, "content"); err != nil {
			return abi.Proposal{}, err
		}
		elems = objects(blocks)
	}

	actions := make([]abi.Action, 0, len(blocks))
	for i, raw := range blocks {
		cl := bl.call(i)
		o := elems[i]
		if o == nil {
			return abi.Proposal{}, cl.errorf(nil, "content block must be an object, got %s", kindName(raw))
		}
		if err := checkFold(o, cl, []string{"type"}); err != nil {
			return abi.Proposal{}, err
		}
		typ, err := o.name(cl, "type")
		if err != nil {
			return abi.Proposal{}, err
		}
		switch typ {
		case "tool_use":
		case "text", "thinking", "redacted_thinking":
			continue
		default:
			// server_tool_use, mcp_tool_use and the like are calls too;
			// skipping them would let them pass unchecked.
			return abi.Proposal{}, cl.at("type").errorf(nil, "unsupported content block type %s: want tool_use, text, thinking or redacted_thinking", quote(typ))
		}
		a, err := toolUseBlock(o, cl)
		if err != nil {
			return abi.Proposal{}, err
		}
		actions = append(actions, a)
	}
	if len(actions) == 0 {
		return abi.Proposal{}, l.noCalls()
	}
	return abi.Proposal{Actions: actions}, nil
}
