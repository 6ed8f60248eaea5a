package gatetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

// configEcho accepts and returns, as evidence, the config its run saw: the
// SDK's resolved config, whether or not the request carried it.
var configEcho = sdk.Gate{
	Descriptor: abi.Descriptor{Name: "config-echo", Version: "1", SubjectKinds: []abi.SubjectKind{abi.SubjectToolCall}},
	Evaluate: func(_ context.Context, req sdk.Request) (abi.Response, error) {
		return abi.Response{Verdict: abi.Accepted, Evidence: map[string]any{"config": string(req.Config)}}, nil
	},
}

func digestOf(wire string) string {
	sum := sha256.Sum256([]byte(wire))
	return abi.ConfigDigestPrefix + hex.EncodeToString(sum[:])
}

func TestInstanceSendsConfigOnce(t *testing.T) {
	type sent struct {
		config string // "" when left out
		digest string
	}
	tests := []struct {
		name    string
		configs []string // one run each, in order
		// notHeld: the gate answers config_not_held to a request without
		// config at these runs, as a module that lost it would.
		notHeld map[int]bool
		want    []sent
	}{
		{name: "no config, no digest", configs: []string{"", ""},
			want: []sent{{}, {}}},
		{name: "sent once, compacted", configs: []string{`{ "a" : 1 }`, `{ "a" : 1 }`, `{ "a" : 1 }`},
			want: []sent{{`{"a":1}`, digestOf(`{"a":1}`)}, {"", digestOf(`{"a":1}`)}, {"", digestOf(`{"a":1}`)}}},
		{name: "digest of the bytes as sent: escaped as json.Marshal escapes", configs: []string{`{"when": "a < b && c > d"}`, `{"when": "a < b && c > d"}`},
			want: []sent{{`{"when":"a \u003c b \u0026\u0026 c \u003e d"}`, digestOf(`{"when":"a \u003c b \u0026\u0026 c \u003e d"}`)}, {"", digestOf(`{"when":"a \u003c b \u0026\u0026 c \u003e d"}`)}}},
		{name: "a second config, then the first again", configs: []string{`{"a":1}`, `{"b":2}`, `{"a":1}`, `{"b":2}`},
			want: []sent{{`{"a":1}`, digestOf(`{"a":1}`)}, {`{"b":2}`, digestOf(`{"b":2}`)}, {"", digestOf(`{"a":1}`)}, {"", digestOf(`{"b":2}`)}}},
		{name: "config_not_held: sent again in the same run", configs: []string{`{"a":1}`, `{"a":1}`, `{"a":1}`}, notHeld: map[int]bool{1: true},
			want: []sent{{`{"a":1}`, digestOf(`{"a":1}`)}, {"", digestOf(`{"a":1}`)}, {`{"a":1}`, digestOf(`{"a":1}`)}, {"", digestOf(`{"a":1}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []sent
			run := 0
			inst := NewInstance(configEcho, NewHost())
			inst.evaluate = func(ctx context.Context, g sdk.Gate, req abi.Request, h sdk.Host) (abi.Response, error) {
				got = append(got, sent{string(req.Config), req.ConfigDigest})
				if tt.notHeld[run] && req.Config == nil {
					return sdk.Inconclusive(abi.ReasonConfigNotHeld, nil), nil
				}
				return Evaluate(ctx, g, req, h)
			}
			for i, c := range tt.configs {
				run = i
				req := abi.Request{SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{"tool":"t"}`)}
				if c != "" {
					req.Config = json.RawMessage(c)
				}
				resp, err := inst.Evaluate(context.Background(), req)
				require.NoError(t, err)
				assert.Equal(t, abi.Accepted, resp.Verdict, "run %d: %s", i, resp.Reason)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// Past abi.ConfigCacheSize distinct configs the oldest is sent in full
// again, as the host does; each run sees its own config.
func TestInstanceForgetsOldest(t *testing.T) {
	var full []string
	inst := NewInstance(configEcho, NewHost())
	inst.evaluate = func(ctx context.Context, g sdk.Gate, req abi.Request, h sdk.Host) (abi.Response, error) {
		if req.Config != nil {
			full = append(full, string(req.Config))
		}
		return Evaluate(ctx, g, req, h)
	}
	config := func(i int) string { return fmt.Sprintf(`{"instance-test":%d}`, i) }
	for i := range abi.ConfigCacheSize + 1 {
		resp, err := inst.Evaluate(context.Background(), abi.Request{SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{}`), Config: json.RawMessage(config(i))})
		require.NoError(t, err)
		require.Equal(t, config(i), resp.Evidence["config"])
	}
	for _, i := range []int{1, 0} { // 1 is still held; 0 was pushed out
		resp, err := inst.Evaluate(context.Background(), abi.Request{SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{}`), Config: json.RawMessage(config(i))})
		require.NoError(t, err)
		require.Equal(t, config(i), resp.Evidence["config"])
	}
	assert.Len(t, full, abi.ConfigCacheSize+2)
	assert.Equal(t, config(0), full[len(full)-1])
}

func TestInstanceConfigNotJSON(t *testing.T) {
	_, err := NewInstance(configEcho, NewHost()).Evaluate(context.Background(),
		abi.Request{SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{}`), Config: json.RawMessage(`{"a":`)})
	require.ErrorContains(t, err, "gatetest: config")
}
