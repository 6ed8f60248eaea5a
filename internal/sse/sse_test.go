package sse_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/sse"
)

func read(t *testing.T, stream string, max int) ([]sse.Event, error) {
	t.Helper()
	var got []sse.Event
	err := sse.Read(strings.NewReader(stream), max, func(ev sse.Event) error {
		got = append(got, ev)
		return nil
	})
	return got, err
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []sse.Event
	}{
		{"one event", "data: {\"a\":1}\n\n", []sse.Event{{Data: []byte(`{"a":1}`)}}},
		{"CRLF and CR endings", "id: 7\r\ndata: x\rdata: y\r\n\r", []sse.Event{{LastID: "7", Data: []byte("x\ny")}}},
		{"id holds, type resets", "id: 1\nevent: ping\ndata: a\n\ndata: b\n\n",
			[]sse.Event{{LastID: "1", Type: "ping", Data: []byte("a")}, {LastID: "1", Data: []byte("b")}}},
		{"comments, retry, no space after the colon", ": hi\nretry: 10\ndata:z\n\n", []sse.Event{{Data: []byte("z")}}},
		{"an id-only event", "id: 9\n\n", []sse.Event{{LastID: "9", Data: nil}}},
		{"an id with NUL is ignored", "id: 1\n\nid: a\x00b\ndata: c\n\n", []sse.Event{{LastID: "1"}, {LastID: "1", Data: []byte("c")}}},
		{"a byte-order mark first", "\xef\xbb\xbfdata: m\n\n", []sse.Event{{Data: []byte("m")}}},
		{"a field without a colon", "data\n\n", []sse.Event{{Data: []byte("")}}},
		{"an unended event is not dispatched", "data: a\n\ndata: b\n", []sse.Event{{Data: []byte("a")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := read(t, tc.stream, 1<<10)
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for i := range got {
				assert.Equal(t, tc.want[i].LastID, got[i].LastID, "event %d", i)
				assert.Equal(t, tc.want[i].Type, got[i].Type, "event %d", i)
				assert.Equal(t, string(tc.want[i].Data), string(got[i].Data), "event %d", i)
			}
		})
	}
}

func TestReadBounds(t *testing.T) {
	_, err := read(t, "data: "+strings.Repeat("x", 100)+"\n\n", 64)
	assert.ErrorIs(t, err, sse.ErrEventTooLarge)
	// The bound is per event: many small events pass.
	got, err := read(t, strings.Repeat("data: 0123456789\n\n", 100), 64)
	require.NoError(t, err)
	assert.Len(t, got, 100)
	stop := errors.New("stop")
	err = sse.Read(strings.NewReader("data: a\n\ndata: b\n\n"), 64, func(sse.Event) error { return stop })
	assert.ErrorIs(t, err, stop, "yield's error ends the read")
	err = sse.Read(iotest.ErrReader(iotest.ErrTimeout), 64, func(sse.Event) error { return nil })
	assert.ErrorIs(t, err, iotest.ErrTimeout)
}

// BenchmarkReadTrickled reads one 1 MiB event delivered a byte at a time:
// the time is linear in the event (a reader that rescans what it buffered
// on every read is quadratic here).
func BenchmarkReadTrickled(b *testing.B) {
	stream := "data: " + strings.Repeat("x", 1<<20) + "\n\n"
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		err := sse.Read(iotest.OneByteReader(strings.NewReader(stream)), 2<<20, func(sse.Event) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzRead: any bytes are read without a panic; no event is larger than
// the bound; and events written in the format are read back as written.
func FuzzRead(f *testing.F) {
	f.Add([]byte("id: 1\r\ndata: {}\r\n\r\n"), "7", "message", "a\nb")
	f.Add([]byte(": c\rdata\r\r"), "", "", "")
	f.Fuzz(func(t *testing.T, raw []byte, id, typ, data string) {
		const max = 256
		_ = sse.Read(strings.NewReader(string(raw)), max, func(ev sse.Event) error {
			if len(ev.Data) > max {
				t.Fatalf("event data of %d bytes over the bound %d", len(ev.Data), max)
			}
			return nil
		})
		if strings.ContainsAny(id+typ, "\r\n\x00") || strings.ContainsRune(data, '\r') || strings.HasPrefix(id, " ") || strings.HasPrefix(typ, " ") {
			return
		}
		var w strings.Builder
		w.WriteString("id: " + id + "\n")
		if typ != "" {
			w.WriteString("event: " + typ + "\n")
		}
		for _, l := range strings.Split(data, "\n") {
			w.WriteString("data: " + l + "\n")
		}
		w.WriteString("\n")
		got, err := read(t, w.String(), 1<<20)
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, id, got[0].LastID)
		assert.Equal(t, typ, got[0].Type)
		assert.Equal(t, data, string(got[0].Data))
	})
}
