package baseline_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/mcpgateway/baseline/baselinetest"
)

// FuzzParse reads untrusted bytes as a baseline file: Parse never panics,
// refuses with ErrInvalid, and what it accepts Marshal writes back to a
// file that parses to the same baseline and writes back to the same bytes.
func FuzzParse(f *testing.F) {
	s, err := baseline.NewSet([]baseline.Entry{
		baselinetest.Entry(f, "up", "a", "first <a> & \u2028", baseline.ApprovedByFirstListing),
		baselinetest.Entry(f, "up2", "b", "second", "alice"),
	})
	if err != nil {
		f.Fatal(err)
	}
	good, err := baseline.Marshal(s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1,"tools":[]}`))
	f.Add([]byte(`{"version":1,"tools":null}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"tools":[{"upstream":"u","tool":"t","digest":"00","approved_by":"x","approved_at":"2026-01-01T00:00:00+23:59","definition":{}}]}`))
	f.Add(bytes.Replace(good, []byte(`"version": 1`), []byte(`"version": 1.0`), 1))
	f.Add(bytes.Replace(good, []byte(`"tool": "a"`), []byte(`"Tool": "a"`), 1))
	f.Add(bytes.Replace(good, []byte(`Z"`), []byte(`+14:00"`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := baseline.Parse(data)
		if err != nil {
			if !errors.Is(err, baseline.ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			return
		}
		out, err := baseline.Marshal(s)
		if err != nil {
			t.Fatalf("marshal of an accepted baseline: %v", err)
		}
		s2, err := baseline.Parse(out)
		if err != nil {
			t.Fatalf("parse of a marshalled baseline: %v\n%s", err, out)
		}
		if !s.Equal(s2) {
			t.Fatalf("round trip changed the baseline")
		}
		for i, e := range s.Entries() {
			if !bytes.Equal(e.Definition, s2.Entries()[i].Definition) {
				t.Fatalf("round trip changed definition %d", i)
			}
		}
		out2, err := baseline.Marshal(s2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("marshal is not a fixed point: %v", err)
		}
	})
}
