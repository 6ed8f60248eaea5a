package mcpgateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStoreListing: of listings of one connection that end in any order,
// the one begun last is kept, with its own counts; the stream count a
// listing was read under orders nothing (it is 0 while no stream is open).
func TestStoreListing(t *testing.T) {
	type store struct {
		name            string
		seq, gen, under uint64
		stored          bool
	}
	for _, tc := range []struct {
		name       string
		stores     []store
		want       string // the listing kept
		gen, under uint64 // its counts
	}{
		{"in order", []store{{"a", 1, 0, 1, true}, {"b", 2, 1, 1, true}}, "b", 1, 1},
		{"begun earlier, ended last", []store{{"b", 2, 1, 1, true}, {"a", 1, 0, 1, false}}, "b", 1, 1},
		{"read with no stream open after one under a stream", []store{{"a", 1, 0, 1, true}, {"b", 2, 0, 0, true}}, "b", 0, 0},
		{"an unchanged listing stores the listing it compared with", []store{{"l0", 1, 0, 0, true}, {"x", 2, 1, 0, true}, {"l0", 3, 2, 0, true}}, "l0", 2, 0},
		{"an unchanged listing begun before a newer one stores nothing", []store{{"l0", 1, 0, 0, true}, {"x", 3, 2, 0, true}, {"l0", 2, 1, 0, false}}, "x", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &upconn{}
			ls := map[string]*listing{}
			for _, s := range tc.stores {
				if ls[s.name] == nil {
					ls[s.name] = &listing{}
				}
				assert.Equal(t, s.stored, c.storeListing(ls[s.name], s.seq, s.gen, s.under), s.name)
			}
			assert.Same(t, ls[tc.want], c.listing.Load())
			assert.Equal(t, tc.gen, c.listedAt.Load())
			assert.Equal(t, tc.under, c.listedUnder.Load())
		})
	}
}
