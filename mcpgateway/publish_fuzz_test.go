package mcpgateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// FuzzPublish feeds upstream tools/list answers (untrusted bytes, as the
// SDK decodes them) to the catalog publication of a two-upstream gateway:
// taken into a baseline: publishing it must never panic, every route must
// lead to the tool the catalog holds under that name, and a tool that has
// a route when its upstream is published alone keeps one beside the
// other upstream's tools (no listing takes another upstream's tool out).
func FuzzPublish(f *testing.F) {
	for _, s := range []string{
		`[{"name":"read","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]`,
		`[{"name":"x","inputSchema":{"type":"object"}},{"name":"x","inputSchema":{"type":"object"}}]`,
		`[{"name":"b.x","inputSchema":{"type":"object"}},{"name":"x","inputSchema":{"type":"string"}}]`,
		`[{"name":"x","inputSchema":{"type":"object"}},{"name":"b.x","inputSchema":{"type":"object"}}]`,
		`[{"name":"mcp.b:x","inputSchema":{"type":"object"}}]`,
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
		// What each upstream has routes to when it is published alone.
		type tool struct {
			upstream int
			name     string
		}
		alone := map[tool]bool{}
		for up := range 2 {
			var own []baseline.Entry
			for _, e := range entries {
				if e.Upstream == o.Upstreams[up].Name {
					own = append(own, e)
				}
			}
			s, err := baseline.NewSet(own)
			if err != nil {
				t.Fatalf("one upstream's entries: %v", err)
			}
			if err := g.publishLocked(s); err != nil {
				t.Fatalf("publish: %v", err)
			}
			for _, r := range *g.routes.Load() {
				// A name namespaced past the catalog's length bound is
				// refused by the catalog, whoever's it is.
				if len(o.Upstreams[up].Name)+1+len(r.name) <= abi.MaxToolNameBytes {
					alone[tool{r.upstream, r.name}] = true
				}
			}
		}
		if err := g.publishLocked(set); err != nil {
			t.Fatalf("publish: %v", err)
		}
		// Every route leads to the tool the catalog holds under that
		// name: a definition the catalog refused is left out, never half
		// in, and never in another's place.
		snap := h.Catalog().Snapshot()
		routes := *g.routes.Load()
		for name, r := range routes {
			ct, ok := snap.Get(name)
			if !ok {
				t.Fatalf("route %q has no catalog tool", name)
			}
			if ct.ID != r.id || ct.Source != o.Upstreams[r.upstream].Name {
				t.Fatalf("route %q leads to %s of %s; the catalog holds %s of %s", name, r.id, o.Upstreams[r.upstream].Name, ct.ID, ct.Source)
			}
		}
		for r := range alone {
			if _, ok := routeTo(routes, r.upstream, r.name); !ok {
				t.Fatalf("tool %q of upstream %s has a route alone, none beside the other upstream's tools", r.name, o.Upstreams[r.upstream].Name)
			}
		}
	})
}
