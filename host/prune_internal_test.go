package host

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPruneMeasuresAsItCopies: prune's measuring pass uses the bytes and
// reports the cut the copying pass does, and copies only what it cuts.
func TestPruneMeasuresAsItCopies(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name    string
		v       any
		left    int
		wantCut bool
	}{
		{"scalars fit", map[string]any{"a": nil, "b": true, "c": 1.5, "d": json.Number("12345678901234567890"), "e": "s"}, 1 << 10, false},
		{"nested fit", map[string]any{"a": []any{map[string]any{"b": []any{"c", json.Number("1")}}}}, 1 << 10, false},
		{"string over the string bound", map[string]any{"a": long}, 1 << 10, true},
		{"escaped string over the string bound", map[string]any{"a": strings.Repeat("<", 40)}, 1 << 10, true},
		{"members over the whole bound", map[string]any{"a": "0123456789", "b": "0123456789", "c": "0123456789"}, 30, true},
		{"elements over the whole bound", []any{"0123456789", "0123456789", "0123456789"}, 30, true},
		{"empty object", map[string]any{}, 2, false},
		{"no room", map[string]any{"a": 1}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const maxString = 200
			kept, used, cut := prune(tt.v, tt.left, maxString)
			ref := pruner{left: tt.left, maxString: maxString}
			want, _ := ref.value(tt.v)
			assert.Equal(t, tt.wantCut, cut)
			assert.Equal(t, ref.cut, cut, "cut agrees with copying")
			assert.Equal(t, tt.left-ref.left, used, "bytes used agree with copying")
			if cut {
				assert.Equal(t, want, kept)
			} else {
				assert.Nil(t, kept, "nothing cut, nothing copied")
			}
		})
	}
}

func BenchmarkPruneFits(b *testing.B) {
	ev := map[string]any{"checked": json.Number("10"), "tools": []any{"a", "b", "c"}, "nested": map[string]any{"x": true, "y": "z"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, cut := prune(ev, MaxKeptEvidenceBytes, MaxKeptStringBytes); cut {
			b.Fatal("cut")
		}
	}
}
