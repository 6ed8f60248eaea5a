package mcpgateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway passes list items on as the upstream sent them: a tool,
// resource, resource template or prompt reaches the client with every
// field the upstream gave it (fields of later protocol revisions and
// vendors' fields included) and none that it did not (the SDK's types add
// defaults such as "idempotentHint": false, and "ttlMs" and "cacheScope"
// to every list result). The SDK's typed reading of the same answer is
// what the gateway decides on (names, URIs, output schemas); the wire form
// is what it pins in the trust baseline and shows.

// wire is one item of an upstream's list: the SDK's reading of it, and
// the item as it came on the wire.
type wire[T any] struct {
	v   T
	raw json.RawMessage
}

// MarshalJSON is the item as the upstream sent it, so that listAll bounds
// the bytes the upstream sent.
func (w wire[T]) MarshalJSON() ([]byte, error) { return w.raw, nil }

// wirePage reads one page of a list: call makes the SDK's request (with
// the context it is given) and returns the typed items and the next
// cursor; key is the result's member that holds the items ("tools",
// "resources", ...). rest is the result's other members, but nextCursor.
func wirePage[T any](ctx context.Context, key string, call func(ctx context.Context) ([]T, string, error)) (items []wire[T], next string, rest map[string]json.RawMessage, err error) {
	var typed []T
	raw, err := rawCall(ctx, func(ctx context.Context) error {
		var err error
		typed, next, err = call(ctx)
		return err
	})
	if err != nil {
		return nil, "", nil, err
	}
	var members map[string]json.RawMessage
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, "", nil, fmt.Errorf("the upstream's answer is not a JSON object: %w", err)
	}
	if m, ok := members[key]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &raws); err != nil {
			return nil, "", nil, fmt.Errorf("the upstream's %s is not an array: %w", key, err)
		}
	}
	if len(raws) != len(typed) {
		return nil, "", nil, fmt.Errorf("the upstream's %s: %d items on the wire, %d read", key, len(raws), len(typed))
	}
	items = make([]wire[T], len(typed))
	for i := range typed {
		items[i] = wire[T]{typed[i], raws[i]}
	}
	delete(members, key)
	delete(members, "nextCursor")
	return items, next, members, nil
}

// listWire reads every page of one list of an upstream within the listing
// bounds (listAll). rest is the first page's members other than the items
// and nextCursor.
func listWire[T any](ctx context.Context, o Options, method, key string, page func(ctx context.Context, cursor string) ([]T, string, error)) (items []wire[T], rest map[string]json.RawMessage, err error) {
	items, err = listAll(ctx, o, method, func(cursor string) ([]wire[T], string, error) {
		items, next, r, err := wirePage(ctx, key, func(ctx context.Context) ([]T, string, error) { return page(ctx, cursor) })
		if cursor == "" {
			rest = r
		}
		return items, next, err
	})
	return items, rest, err
}

// listWireTools reads an upstream's tools.
func listWireTools(ctx context.Context, o Options, cs *mcp.ClientSession) ([]wire[*mcp.Tool], map[string]json.RawMessage, error) {
	return listWire(ctx, o, "tools/list", "tools", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		r, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Tools, r.NextCursor, nil
	})
}

// wireResult is a result the gateway composed of upstreams' wire forms,
// sent as it is (the SDK marshals a Result with encoding/json).
type wireResult struct {
	mcp.ResultBase
	raw json.RawMessage
	// complete: the answer to a sessionless client (2026-07-28), which
	// says it is final (resultType "complete") and carries the _meta the
	// SDK adds to every answer at that revision (its serverInfo).
	complete bool
}

func (r *wireResult) MarshalJSON() ([]byte, error) {
	if !r.complete {
		return r.raw, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("gatehost mcp gateway: a result is not a JSON object")
	}
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = json.RawMessage(`"complete"`)
	}
	if len(r.Meta) > 0 {
		meta := map[string]json.RawMessage{}
		if raw, ok := m["_meta"]; ok {
			if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
				return nil, fmt.Errorf("gatehost mcp gateway: a result's _meta is not a JSON object")
			}
		}
		for k, v := range r.Meta {
			if _, ok := meta[k]; ok {
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			meta[k] = b
		}
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		m["_meta"] = b
	}
	return json.Marshal(m)
}

// completeResult marks res as the final answer to a sessionless client:
// the SDK does so for its own result types, not for the wire forms the
// gateway passes on, nor for the results of the methods that may ask for
// input (tools/call, resources/read, prompts/get), which it marks only
// when its own handler made them.
func completeResult(res mcp.Result) (mcp.Result, error) {
	switch r := res.(type) {
	case *wireResult:
		r.complete = true
		return r, nil
	case *mcp.CallToolResult, *mcp.ReadResourceResult, *mcp.GetPromptResult:
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		return &wireResult{raw: b, complete: true}, nil
	}
	return res, nil
}

// listResult is the answer to a list method: the items under key, and
// the members of rest (an upstream's own, such as _meta), and nothing else.
func listResult[T any](key string, items []wire[T], rest map[string]json.RawMessage) (*wireResult, error) {
	raws := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		raws = append(raws, it.raw)
	}
	return rawListResult(key, raws, rest)
}

func rawListResult(key string, raws []json.RawMessage, rest map[string]json.RawMessage) (*wireResult, error) {
	if raws == nil {
		raws = []json.RawMessage{}
	}
	members := make(map[string]any, len(rest)+1)
	for k, v := range rest {
		members[k] = v
	}
	members[key] = raws
	b, err := json.Marshal(members)
	if err != nil {
		return nil, err
	}
	return &wireResult{raw: b}, nil
}

// passOn sends one request to an upstream and answers with its result as
// the upstream sent it.
func passOn(ctx context.Context, c *upconn, call func(ctx context.Context, cs *mcp.ClientSession) error) (mcp.Result, error) {
	cs, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := rawCall(ctx, func(ctx context.Context) error { return call(ctx, cs) })
	if err != nil {
		return nil, err
	}
	return &wireResult{raw: raw}, nil
}

// renamed is a tool definition under another name (the gateway's
// namespaced name for it); every other member is kept.
func renamed(def json.RawMessage, name string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(def, &m); err != nil {
		return nil, err
	}
	n, err := json.Marshal(name)
	if err != nil {
		return nil, err
	}
	m["name"] = n
	return json.Marshal(m)
}
