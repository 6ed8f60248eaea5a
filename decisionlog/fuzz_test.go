package decisionlog

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
)

// The cursor file is read back at every start and may have been edited:
// it decodes to a valid Cursor or an ErrBadCursor, never a panic, and a
// decoded one encodes back to itself.
func FuzzDecodeCursor(f *testing.F) {
	for _, s := range []string{`{"seq":3,"hash":"` + eventlog.GenesisPrev + `"}`, `{"seq":0,"hash":""}`, `{}`, `{"seq":-1}`,
		`{"seq":1,"hash":"AB"}`, `{"seq":1,"hash":"x"} {}`, `[]`, ``, `{"seq":18446744073709551615,"hash":"` + eventlog.GenesisPrev + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCursor(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadCursor)
			return
		}
		if c == (Cursor{}) {
			return
		}
		require.True(t, isHash(c.Hash))
		out, err := json.Marshal(c)
		require.NoError(t, err)
		again, err := decodeCursor(out)
		require.NoError(t, err)
		require.Equal(t, c, again)
	})
}

// Mask pointers come from the config: any string parses or is refused,
// and applying one to any JSON document never panics and never touches
// the chain members.
func FuzzPointer(f *testing.F) {
	f.Add("/result/findings/0/evidence", `{"result":{"findings":[{"evidence":1}]},"seq":1}`)
	f.Add("/a~1b/~0", `{"a/b":{"~":null}}`)
	f.Add("/0/01/-", `[[1,[2]]]`)
	f.Fuzz(func(t *testing.T, ptr, doc string) {
		p, err := ParsePointer(ptr)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidPointer)
			return
		}
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		m, isObj := v.(map[string]any)
		var seq any
		if isObj {
			seq = m["seq"]
		}
		p.apply(v)
		if isObj {
			require.Equal(t, seq, m["seq"])
		}
	})
}

// discardSink acknowledges everything at once.
type discardSink struct{}

func (discardSink) Send(context.Context, []Event) error { return nil }
func (discardSink) Close(context.Context) error         { return nil }

// BenchmarkOffer is the cost a decision pays for export (Offer's hot
// path, the decision's two records) against a no-op baseline.
func BenchmarkOffer(b *testing.B) {
	f := &fixture{}
	recs := f.runRecords()
	b.Run("noop", func(b *testing.B) {
		var sink func(...eventlog.Record)
		sink = func(...eventlog.Record) {}
		b.ReportAllocs()
		for b.Loop() {
			sink(recs...)
		}
	})
	b.Run("exporter", func(b *testing.B) {
		e, err := New(Options{Sink: discardSink{}, Logger: discard(), BufferRecords: 1 << 16})
		require.NoError(b, err)
		b.Cleanup(func() { _ = e.Close(context.Background()) })
		b.ReportAllocs()
		for b.Loop() {
			e.Offer(recs...)
		}
		b.ReportMetric(float64(e.Stats().Dropped[DropBufferFull])/float64(b.N), "drops/op")
	})
}
