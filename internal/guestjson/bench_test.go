package guestjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehost/gatehost/abi"
)

// The decoder's parts on the real request and catalog.get answers, to see where its time goes in
// the guest (GOOS=wasip1 GOARCH=wasm go test -c, run on wazero);
// bench/guestjson compares it with the alternatives.
func BenchmarkParts(b *testing.B) {
	req, err := os.ReadFile(filepath.Join("testdata", "request.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("skip", func(b *testing.B) {
		for b.Loop() {
			d := decoder{data: req}
			if err := d.skip(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r abi.Request
			if err := DecodeRequest(req, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	var r abi.Request
	if err := DecodeRequest(req, &r); err != nil {
		b.Fatal(err)
	}
	b.Run("proposal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p abi.Proposal
			if err := DecodeProposal(r.Subject, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	var answers []json.RawMessage
	if err := json.Unmarshal(readShape(b, "@answers.json"), &answers); err != nil {
		b.Fatal(err)
	}
	b.Run("catalog-get-answers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, a := range answers {
				var env Envelope[abi.CatalogGetAnswer]
				if _, err := DecodeEnvelope(a, &env); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
