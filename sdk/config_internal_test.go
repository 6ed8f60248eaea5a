package sdk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

func digestOf(config string) string {
	sum := sha256.Sum256([]byte(config))
	return abi.ConfigDigestPrefix + hex.EncodeToString(sum[:])
}

// TestHeldConfigs: a config is kept under its own digest, the last
// heldConfigCap distinct ones; a digest left without its config resolves to
// the kept config or to config_not_held, never to no config.
func TestHeldConfigs(t *testing.T) {
	var h heldConfigs
	configs := make([]string, heldConfigCap+1)
	for i := range configs {
		configs[i] = fmt.Sprintf(`{"n":%d}`, i)
		got, _, err := h.resolve(digestOf(configs[i]), json.RawMessage(configs[i]))
		require.NoError(t, err)
		assert.JSONEq(t, configs[i], string(got))
	}
	// The oldest went; the last heldConfigCap are held, the host's last
	// abi.ConfigCacheSize among them.
	_, reason, err := h.resolve(digestOf(configs[0]), nil)
	assert.ErrorIs(t, err, ErrConfigNotHeld)
	assert.Equal(t, abi.ReasonConfigNotHeld, reason)
	for _, c := range configs[1:] {
		got, _, err := h.resolve(digestOf(c), nil)
		require.NoError(t, err)
		assert.Equal(t, c, string(got))
	}

	tests := []struct {
		name, digest, config string
	}{
		{"config under another config's digest", digestOf(configs[1]), `{"n":-1}`},
		{"config under a digest not held", digestOf(`{"x":1}`), `{"n":-1}`},
		{"digest without its prefix", digestOf(`{"n":-1}`)[len(abi.ConfigDigestPrefix):], `{"n":-1}`},
		{"digest in upper case", "sha256:" + fmt.Sprintf("%X", sha256.Sum256([]byte(`{"n":-1}`))), `{"n":-1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, reason, err := h.resolve(tc.digest, json.RawMessage(tc.config))
			require.Error(t, err)
			assert.Equal(t, abi.ReasonBadRequest, reason)
		})
	}
}

// TestDerived: one derivation per config, by digest or else by bytes; an
// error is returned each time and never kept.
func TestDerived(t *testing.T) {
	var d Derived[string]
	calls := 0
	derive := func(raw json.RawMessage) (string, error) {
		calls++
		if string(raw) == `"bad"` {
			return "", errors.New("bad config")
		}
		return "parsed " + string(raw), nil
	}
	req := func(config, digest string) Request {
		return Request{Request: abi.Request{Config: json.RawMessage(config), ConfigDigest: digest}}
	}
	tests := []struct {
		name      string
		req       Request
		want      string
		wantErr   bool
		wantCalls int
	}{
		{"by bytes, first", req(`"a"`, ""), `parsed "a"`, false, 1},
		{"by bytes, again", req(`"a"`, ""), `parsed "a"`, false, 1},
		{"by digest, first", req(`"a"`, digestOf(`"a"`)), `parsed "a"`, false, 2},
		{"by digest, config left out", req(``, digestOf(`"a"`)), `parsed "a"`, false, 2},
		{"other bytes", req(`"b"`, ""), `parsed "b"`, false, 3},
		{"error", req(`"bad"`, ""), "", true, 4},
		{"error again: not kept", req(`"bad"`, ""), "", true, 5},
	}
	for _, tc := range tests {
		got, err := d.Get(tc.req, derive)
		if tc.wantErr {
			assert.Error(t, err, tc.name)
		} else {
			assert.NoError(t, err, tc.name)
			assert.Equal(t, tc.want, got, tc.name)
		}
		assert.Equal(t, tc.wantCalls, calls, tc.name)
	}
	for i := range heldConfigCap + 1 {
		_, err := d.Get(req(fmt.Sprint(i), ""), derive)
		require.NoError(t, err)
	}
	assert.Len(t, d.entries, heldConfigCap, "bounded")
}
