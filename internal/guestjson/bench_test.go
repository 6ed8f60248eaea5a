package guestjson

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehost/gatehost/abi"
)

// The decoder's parts on the real request, to see where its time goes in
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
}
