package postgres

import (
	"errors"
	"testing"

	"github.com/gatehost/gatehost/host/catalog"
)

// Whatever bytes the database holds, decodeCatalog returns a catalog
// with exactly the digest it was asked for, or an integrity error.
func FuzzDecodeCatalog(f *testing.F) {
	snap := func(tools ...catalog.Tool) *catalog.Snapshot {
		s, err := catalog.NewStore(tools...)
		if err != nil {
			f.Fatal(err)
		}
		return s.Snapshot()
	}
	for _, s := range []*catalog.Snapshot{
		snap(),
		snap(catalog.Tool{ID: "builtin:a", Name: "a", Aliases: []string{"b"}, Provenance: catalog.ProvenanceBuiltin, Effect: catalog.EffectReadOnly}),
		snap(catalog.Tool{ID: "mcp.s:t", Name: "t", Provenance: "mcp_config{s}", Source: "s", Hints: &catalog.Hints{Idempotent: true}}),
	} {
		content, err := s.MarshalNative()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s.Digest(), content)
	}
	f.Add("", []byte(`{"tools":[{"name":"x","hints":{"read_only":1}}]}`))
	f.Fuzz(func(t *testing.T, digest string, content []byte) {
		tools, err := decodeCatalog(digest, content)
		if err != nil {
			if !errors.Is(err, ErrCatalogIntegrity) || tools != nil {
				t.Fatalf("%v with %d tools", err, len(tools))
			}
			return
		}
		s, err := catalog.NewStore(tools...)
		if err != nil || s.Snapshot().Digest() != digest {
			t.Fatalf("decoded a catalog that is not %s (%v)", digest, err)
		}
	})
}
