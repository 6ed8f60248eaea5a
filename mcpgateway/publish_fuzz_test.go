package mcpgateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// FuzzPublish feeds upstream tools/list answers (untrusted bytes, as the
// SDK decodes them) to the catalog publication of a two-upstream gateway:
// taken into a baseline: publishing it must never panic, and every route
// must lead to a tool the catalog holds.
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
		g := &Gateway{h: h, opts: o}
		g.routes.Store(&map[string]route{})
		var entries []baseline.Entry
		for up, ts := range map[string][]*mcp.Tool{"a": ta, "b": tb} {
			for _, tl := range ts {
				if tl == nil {
					continue
				}
				def, err := json.Marshal(tl)
				if err != nil {
					continue
				}
				if e, err := baseline.NewEntry(up, tl.Name, def, "first_listing", time.Unix(0, 0)); err == nil {
					entries = append(entries, e)
				}
			}
		}
		set, err := baseline.NewSet(entries)
		if err != nil {
			return
		}
		if err := g.publishLocked(set); err != nil {
			t.Fatalf("publish: %v", err)
		}
		// Every route leads to a tool the catalog holds under that name:
		// a definition the catalog refused is left out, never half in.
		snap := h.Catalog().Snapshot()
		for name := range *g.routes.Load() {
			if _, ok := snap.Get(name); !ok {
				t.Fatalf("route %q has no catalog tool", name)
			}
		}
	})
}
