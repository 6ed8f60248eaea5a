package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/counter"
)

// RateLimit is the policy of the rate-limit tests: any call is permitted,
// but not a RateLimitN+1th mcp.mail:send_email of a session within an hour.
const (
	RateLimit = `
@id("any")
permit (principal, action, resource);

@id("send-email-per-hour")
@message("at most 3 send_email per session per hour")
forbid (principal, action == Action::"mcp.mail:send_email", resource)
when { context.session.window["1h"].calls["mcp.mail:send_email"] >= 3 };

@id("no-spam")
forbid (principal, action == Action::"mcp.mail:send_email", resource)
when { context.arguments.subject like "*SPAM*" };
`
	RateLimitN = 3
)

// MailCatalog holds mcp.mail:send_email and mcp.mail:read_inbox.
func MailCatalog(t testing.TB) *catalog.Store {
	t.Helper()
	schema := json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"}},"required":["to","subject"]}`)
	s, err := catalog.NewStore(
		catalog.Tool{ID: "mcp.mail:send_email", Name: "send_email", InputSchema: schema, Effect: abi.EffectNonIdempotent},
		catalog.Tool{ID: "mcp.mail:read_inbox", Name: "read_inbox", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: abi.EffectReadOnly},
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// PolicyHost is a host running the policy gate (module wasm) with
// RateLimit on pipeline "p" over tool calls, counting in counters over 1h.
func PolicyHost(t testing.TB, wasm string, counters counter.Store, cfg host.Config) *host.Host {
	t.Helper()
	conf, err := json.Marshal(map[string]any{"policies": []map[string]string{{"file": "rate.cedar", "text": RateLimit}}, "windows": []string{"1h"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Plugins = map[string]host.PluginConfig{"policy": {Path: wasm}}
	if cfg.Catalog == nil {
		cfg.Catalog = MailCatalog(t)
	}
	cfg.Counters = counters
	cfg.CounterWindows = []time.Duration{time.Hour}
	cfg.Pipelines = map[string]host.PipelineConfig{"p": {Subject: abi.SubjectToolCall,
		Stages: []host.StageConfig{{Plugin: "policy", Capabilities: []string{abi.CapabilityCatalog}, Config: conf}}}}
	return New(t, cfg)
}

// Email is a send_email call.
func Email(subject string) []byte {
	return fmt.Appendf(nil, `{"tool":"send_email","parameters":{"to":"a@example.com","subject":%q}}`, subject)
}

// Alternate checks calls of session on hosts in turn (the first on
// hosts[0]) and returns the verdicts.
func Alternate(t testing.TB, hosts []*host.Host, session string, calls ...[]byte) []abi.Verdict {
	t.Helper()
	var out []abi.Verdict
	for i, c := range calls {
		d, err := hosts[i%len(hosts)].Check(context.Background(), "p", c, host.RunOptions{Session: session})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		out = append(out, d.Verdict)
	}
	return out
}
