package baseline

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/jsonptr"
	"github.com/gatehost/gatehost/internal/runecut"
)

// MaxChangeValueBytes bounds Change.Old and Change.New; longer values are
// cut on a rune boundary and end with "…".
const MaxChangeValueBytes = 200

// Change is one difference between two definitions.
type Change struct {
	// Path is the RFC 6901 JSON pointer of the changed value, such as
	// "/annotations/title" or "/inputSchema/required/0"; "" for the whole
	// definition.
	Path string
	// Old and New are the value's JSON text before and after (canonical,
	// cut to MaxChangeValueBytes); "" when absent on that side.
	Old, New string
}

// Diff returns what changed from old to new, for logs and for an
// operator's review: one Change per value added, removed or replaced, in
// path order, descending into objects (by key) and arrays (by index) that
// both sides hold. Values are compared as the digest compares them (key
// order, whitespace and number spelling do not count), so two definitions
// with the same digest have no changes. A side that is not valid JSON is
// compared as a whole: one Change of path "" with the texts as given. An
// empty side is absent (a tool new to the baseline, or gone from the
// listing). At most MaxChanges are listed, and no more once their paths
// together pass MaxChangePathBytes; a list cut there ends with one Change
// whose Path is MoreChanges. Definitions come from upstream servers, so
// the work is linear in their size: a path is built only for a change
// listed (each repeats the member names above it, so building one for
// every element under a long name cost the product of the two).
func Diff(old, new json.RawMessage) []Change {
	a, aerr := decode(old)
	b, berr := decode(new)
	if aerr != nil || berr != nil {
		if bytes.Equal(old, new) {
			return nil
		}
		return []Change{{Old: cutValue(string(old)), New: cutValue(string(new))}}
	}
	d := differ{}
	d.value(a, b, len(old) > 0, len(new) > 0)
	if d.cut {
		d.out = append(d.out, Change{Path: MoreChanges})
	}
	return d.out
}

// Bounds of Diff's list.
const (
	MaxChanges         = 100
	MaxChangePathBytes = 16 << 10
	// MoreChanges is the Path of the Change that ends a cut list: not a
	// JSON pointer, which is "" or starts with "/".
	MoreChanges = "…"
)

// differ walks two decoded definitions side by side.
type differ struct {
	path  []string // reference tokens, unescaped, to the values compared
	out   []Change
	bytes int // of the paths in out
	cut   bool
}

// decode reads strict JSON (as the digest does) with numbers kept as text.
func decode(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if _, err := catalog.CanonicalJSON(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func (d *differ) value(a, b any, hasA, hasB bool) {
	if d.cut {
		return
	}
	if hasA && hasB {
		switch av := a.(type) {
		case map[string]any:
			if bv, ok := b.(map[string]any); ok {
				keys := make([]string, 0, len(av)+len(bv))
				for k := range av {
					keys = append(keys, k)
				}
				for k := range bv {
					if _, ok := av[k]; !ok {
						keys = append(keys, k)
					}
				}
				slices.Sort(keys)
				for _, k := range keys {
					x, okA := av[k]
					y, okB := bv[k]
					d.path = append(d.path, k)
					d.value(x, y, okA, okB)
					d.path = d.path[:len(d.path)-1]
				}
				return
			}
		case []any:
			if bv, ok := b.([]any); ok {
				for i := range max(len(av), len(bv)) {
					var x, y any
					if i < len(av) {
						x = av[i]
					}
					if i < len(bv) {
						y = bv[i]
					}
					d.path = append(d.path, strconv.Itoa(i))
					d.value(x, y, i < len(av), i < len(bv))
					d.path = d.path[:len(d.path)-1]
				}
				return
			}
		}
	}
	var sa, sb string
	if hasA {
		sa = text(a)
	}
	if hasB {
		sb = text(b)
	}
	if hasA == hasB && sa == sb {
		return
	}
	if len(d.out) == MaxChanges || (len(d.out) > 0 && d.bytes > MaxChangePathBytes) {
		d.cut = true
		return
	}
	p := jsonptr.Join(d.path...)
	d.bytes += len(p)
	d.out = append(d.out, Change{Path: p, Old: cutValue(sa), New: cutValue(sb)})
}

// text returns the canonical JSON of a decoded value.
func text(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	c, err := catalog.CanonicalJSON(buf.Bytes())
	if err != nil {
		return strings.TrimSuffix(buf.String(), "\n")
	}
	return string(c)
}

func cutValue(s string) string { return runecut.Cut(s, MaxChangeValueBytes, "…") }
