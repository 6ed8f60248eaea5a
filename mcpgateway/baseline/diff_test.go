package baseline_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

func TestDiff(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	cases := []struct {
		name     string
		old, new string
		want     []baseline.Change
	}{
		{"equal", tool, tool, nil},
		{"spelling only", `{"a":1,"b":[1.0]}`, `{ "b": [1], "a": 1e0 }`, nil},
		{"nested change", `{"annotations":{"title":"A","readOnlyHint":true}}`, `{"annotations":{"title":"B","readOnlyHint":true}}`,
			[]baseline.Change{{Path: "/annotations/title", Old: `"A"`, New: `"B"`}}},
		{"added and removed", `{"name":"t","title":"T"}`, `{"name":"t","description":"d"}`,
			[]baseline.Change{{Path: "/description", New: `"d"`}, {Path: "/title", Old: `"T"`}}},
		{"added object", `{"name":"t"}`, `{"name":"t","annotations":{"z":1,"a":true}}`,
			[]baseline.Change{{Path: "/annotations", New: `{"a":true,"z":1}`}}},
		{"type changed", `{"x":{"a":1}}`, `{"x":[1]}`,
			[]baseline.Change{{Path: "/x", Old: `{"a":1}`, New: `[1]`}}},
		{"array elements", `{"required":["a","b"]}`, `{"required":["a","c","d"]}`,
			[]baseline.Change{{Path: "/required/1", Old: `"b"`, New: `"c"`}, {Path: "/required/2", New: `"d"`}}},
		{"pointer escapes", `{"_meta":{"a/b~c":1}}`, `{"_meta":{"a/b~c":2}}`,
			[]baseline.Change{{Path: "/_meta/a~1b~0c", Old: "1", New: "2"}}},
		{"no old", ``, `{"name":"t"}`, []baseline.Change{{New: `{"name":"t"}`}}},
		{"not JSON", `{"name":`, `{"name":"t"}`, []baseline.Change{{Old: `{"name":`, New: `{"name":"t"}`}}},
		{"markup kept", `{"d":"<b>"}`, `{"d":"<i>&"}`, []baseline.Change{{Path: "/d", Old: `"<b>"`, New: `"<i>&"`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, baseline.Diff(json.RawMessage(tc.old), json.RawMessage(tc.new)))
		})
	}

	t.Run("long values cut on a rune boundary", func(t *testing.T) {
		got := baseline.Diff(json.RawMessage(`{"description":"short"}`), json.RawMessage(`{"description":"`+long+`"}`))
		if assert.Len(t, got, 1) {
			c := got[0]
			assert.Equal(t, "/description", c.Path)
			assert.True(t, utf8.ValidString(c.New))
			assert.True(t, strings.HasSuffix(c.New, "…"))
			assert.LessOrEqual(t, len(c.New), baseline.MaxChangeValueBytes+len("…"))
			assert.True(t, strings.HasPrefix(c.New, `"éé`))
		}
	})
}

// An upstream's definition with one long member name over many changed
// elements: every change's path repeats the name, so the list is cut
// (MaxChanges, MaxChangePathBytes, then a MoreChanges entry) and the work
// stays linear in the definitions: against the same change under a
// one-byte name, at most some copies of the name more (quadratic, it
// would be thousands: one per element).
func TestDiffOfALongNameIsBounded(t *testing.T) {
	const name, elems = 64 << 10, 8000
	def := func(key, elem string) json.RawMessage {
		return json.RawMessage(`{"inputSchema":{"` + key + `":[` + strings.TrimSuffix(strings.Repeat(elem+",", elems), ",") + `]}}`)
	}
	measure := func(key string) ([]baseline.Change, uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		changes := baseline.Diff(def(key, "1"), def(key, "2"))
		runtime.ReadMemStats(&after)
		return changes, after.TotalAlloc - before.TotalAlloc
	}
	shortChanges, short := measure("k")
	require.Len(t, shortChanges, baseline.MaxChanges+1)
	changes, long := measure(strings.Repeat("k", name))
	assert.Less(t, long, short+64*name, "a %d-byte name allocated %d bytes, against %d under a one-byte name", name, long, short)
	require.NotEmpty(t, changes)
	assert.LessOrEqual(t, len(changes), baseline.MaxChanges+1)
	assert.Equal(t, baseline.MoreChanges, changes[len(changes)-1].Path, "a cut list says so")
	bytes := 0
	for _, c := range changes[:len(changes)-2] {
		bytes += len(c.Path)
	}
	assert.LessOrEqual(t, bytes, baseline.MaxChangePathBytes)
	assert.Equal(t, "/inputSchema/"+strings.Repeat("k", name)+"/0", changes[0].Path)
}
