package guestjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehost/gatehost/abi"
)

// BenchmarkRequestConfig decodes a request whose config holds 8 KB of
// policy text, the same bytes on every run as a stage's are: with the
// config remembered (memo) and checked whole each time (nomemo).
func BenchmarkRequestConfig(b *testing.B) {
	text := strings.Repeat("@id(\"permit-1\") permit(principal, action in Action::\"mcp.fs:*\", resource)\nwhen { context.paths has path };\n", 80)
	cfg, _ := json.Marshal(map[string]any{"policies": []map[string]string{{"file": "bench.cedar", "text": text}}})
	req, _ := json.Marshal(abi.Request{ABIVersion: 1, SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{"tool":"write_file","parameters":{"path":"/srv/x"}}`),
		Config: cfg, Context: abi.Context{Now: "2026-01-01T00:00:00Z", Capabilities: []string{"catalog"}}})
	for _, memo := range []bool{true, false} {
		name := "memo"
		if !memo {
			name = "nomemo"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !memo {
					configMemo.b = nil
				}
				var r abi.Request
				if err := DecodeRequest(req, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
