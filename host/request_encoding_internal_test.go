package host

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// TestEncodeRequestAsMarshal: a request encoded with its config encoded
// once at load is the bytes json.Marshal gives for the request holding
// the config.
func TestEncodeRequestAsMarshal(t *testing.T) {
	subjects := []string{`{"tool":"a<b>&c","parameters":{"x":"\u2028 \"q\" \\ é"}}`, `{ "actions" : [ 1, 2.50, -0e3 ] }`, `null`, ``}
	configs := []string{``, `{}`, `null`, `{"policies":[{"text":"permit (principal, action, resource)\nwhen { context.x like \"<&>\" };"}],"n":1.50e+2}`,
		"{\"s\":\"\u2028\u2029\xff\"}", `[ 1 , {"a" : "b"} ]`}
	ctxs := []abi.Context{{Now: "2026-01-01T00:00:00Z"},
		{CatalogGeneration: 7, Session: "s<1>", Now: "2026-01-01T00:00:00.5Z", Capabilities: []string{"catalog", "counters"},
			Confirmation: &abi.Confirmation{Tool: "mcp.fs:write_file", Token: "t&k"},
			Principal:    &abi.Principal{Method: abi.MethodOIDC, Issuer: "https://id", Subject: "alice", Claims: map[string]any{"roles": []any{"a", "<b>"}}}}}
	for _, subject := range subjects {
		for _, config := range configs {
			for _, ctx := range ctxs {
				r := abi.Request{ABIVersion: abi.MajorVersion, MinorVersion: abi.MinorVersion, RunID: "0123", Pipeline: "p&", Stage: "s<",
					SubjectKind: abi.SubjectToolCall, Context: ctx}
				if subject != "" {
					r.Subject = json.RawMessage(subject)
				}
				var conf []byte
				if config != "" {
					conf = []byte(config)
				}
				want := r
				want.Config = conf
				wantB, err := json.Marshal(want)
				require.NoError(t, err)
				wire, err := wireConfig(conf)
				require.NoError(t, err)
				got, err := encodeRequest(r, wire)
				require.NoError(t, err)
				require.Equal(t, string(wantB), string(got), "subject %s config %s", subject, config)
			}
		}
	}
}
