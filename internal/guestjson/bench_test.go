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

// BenchmarkEncodeCallAnswer: the host's envelope of a query.rows answer
// (the retail domain's order row) and of a schema.validate_many answer for
// ten actions, without reflection, against abi.EncodeCallAnswer
// (encoding/json) as the baseline.
func BenchmarkEncodeCallAnswer(b *testing.B) {
	rows := abi.QueryRowsAnswer{Rows: []map[string]any{{
		"order_id": "#W2378156", "status": "delivered", "user_id": "yusuf_rossi_9620",
		"items":           []any{map[string]any{"item_id": "1151293680", "price": 272.33, "options": map[string]any{"color": "red"}}},
		"payment_history": []any{map[string]any{"payment_method_id": "credit_card_9513926", "amount": 2987.21}},
	}}}
	many := abi.SchemaValidateManyAnswer{}
	for range 10 {
		many.Items = append(many.Items, abi.SchemaValidateAnswer{Found: true, Valid: true,
			SchemaDigest: "5c0b56b6c8f2d1e4a7b3f9e0d2c4b6a8e1f3d5c7b9a0e2f4d6c8b0a2e4f6d854"})
	}
	for _, tc := range []struct {
		name string
		v    any
	}{{"rows", rows}, {"schema-many", many}} {
		b.Run(tc.name+"/guestjson", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				EncodeCallAnswer(tc.v, nil)
			}
		})
		b.Run(tc.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				abi.EncodeCallAnswer(tc.v, nil)
			}
		})
	}
}

// BenchmarkDecodeHostRequest: the host's decode of a query.rows request
// with an overlay and of a ten-item schema.validate_many request, without
// reflection, against encoding/json as the baseline.
func BenchmarkDecodeHostRequest(b *testing.B) {
	rows := []byte(`{"domain":"retail","view":"order_state","params":{"order_id":"#W2378156","user_id":"yusuf_rossi_9620"},` +
		`"overlay":[{"collection":"orders","id":"#W2378156","set":{"status":"return requested","return_items":["1151293680"]}}]}`)
	var many []byte
	many = append(many, `{"items":[`...)
	for i := range 10 {
		if i > 0 {
			many = append(many, ',')
		}
		many = append(many, `{"tool":"mcp.github:issue_read","value":{"owner":"octo-org","repo":"widgets","issue_number":42,"method":"get"}}`...)
	}
	many = append(many, `]}`...)
	bench := func(name string, guest, std func() error) {
		b.Run(name+"/guestjson", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := guest(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := std(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	bench("query-rows",
		func() error { var r abi.QueryRowsRequest; _, err := Decode(rows, &r); return err },
		func() error { var r abi.QueryRowsRequest; return json.Unmarshal(rows, &r) })
	bench("schema-many",
		func() error { var r abi.SchemaValidateManyRequest; _, err := Decode(many, &r); return err },
		func() error { var r abi.SchemaValidateManyRequest; return json.Unmarshal(many, &r) })
}
