package mcpgateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/host"
)

// FuzzPublish feeds upstream tools/list answers (untrusted bytes, as the
// SDK decodes them) to the catalog publication of a two-upstream gateway:
// it must never panic, and a list it refuses must leave the routes and
// the catalog as they were.
func FuzzPublish(f *testing.F) {
	for _, s := range []string{
		`[{"name":"read","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]`,
		`[{"name":"x","inputSchema":{"type":"object"}},{"name":"x","inputSchema":{"type":"object"}}]`,
		`[{"name":"b.x","inputSchema":{"type":"object"}},{"name":"x","inputSchema":{"type":"string"}}]`,
		`[{"name":"","inputSchema":{}}]`,
		`[{"name":"\u0000","inputSchema":{"type":"object","properties":{"a":{"type":"integer"}}}}]`,
		`[null]`,
	} {
		f.Add([]byte(s), []byte(`[{"name":"x","inputSchema":{"type":"object"}}]`))
	}
	h, err := host.New(context.Background(), host.Config{CacheDir: host.CacheOff})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = h.Close(context.Background()) })
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ta, tb []*mcp.Tool
		if json.Unmarshal(a, &ta) != nil || json.Unmarshal(b, &tb) != nil {
			return
		}
		o, err := Options{Pipeline: "p", Upstreams: []Upstream{{Name: "a", URL: "u"}, {Name: "b", URL: "u"}}}.normalize()
		if err != nil {
			t.Fatal(err)
		}
		g := &Gateway{h: h, opts: o, lists: make([]*listed, 2)}
		g.routes.Store(&map[string]route{})
		g.lists[0] = &listed{tools: ta}
		if err := g.publishLocked(); err != nil {
			g.lists[0] = nil
		}
		before := h.Catalog().Snapshot().Generation()
		routes := g.routes.Load()
		g.lists[1] = &listed{tools: tb}
		if err := g.publishLocked(); err != nil {
			if h.Catalog().Snapshot().Generation() != before || g.routes.Load() != routes {
				t.Fatalf("a refused list changed the catalog or the routes: %v", err)
			}
		}
	})
}
