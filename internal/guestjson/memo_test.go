package guestjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// memoConfig is a config long enough to be remembered.
var memoConfig = `{"policies":[{"file":"a.cedar","text":"` + strings.Repeat(`permit(principal, action, resource) when { context.x like \"*y*\" };\n`, 6) + `"}]}`

// warm decodes a request holding config, so that configMemo holds it.
func warm(t testing.TB, config string) {
	var r abi.Request
	require.NoError(t, DecodeRequest([]byte(`{"abi_version":1,"config":`+config+`}`), &r))
	require.Equal(t, config, string(r.Config))
}

// TestConfigMemoAgreesWithEncodingJSON: with the config remembered, every
// request decodes as encoding/json decodes it, whether its config is the
// remembered one, starts with it, or is cut short of it.
func TestConfigMemoAgreesWithEncodingJSON(t *testing.T) {
	require.GreaterOrEqual(t, len(memoConfig), minMemo)
	cut := memoConfig[:len(memoConfig)-2]
	tests := []struct {
		name    string
		request string
	}{
		{"the same config", `{"abi_version":1,"config":` + memoConfig + `,"stage":"s"}`},
		{"the same config, last member", `{"config":` + memoConfig + `}`},
		{"the same config, then a member without a comma", `{"config":` + memoConfig + `"stage":"s"}`},
		{"the same config, then data after the request", `{"config":` + memoConfig + `}}`},
		{"the same config, then the input ends", `{"config":` + memoConfig},
		{"cut short", `{"config":` + cut},
		{"cut short, then closed", `{"config":` + cut + `}`},
		{"one byte changed", `{"config":` + strings.Replace(memoConfig, "permit", "forbid", 1) + `}`},
		{"one byte changed to invalid JSON", `{"config":` + strings.Replace(memoConfig, `"file"`, `'file'`, 1) + `}`},
		{"the config as a string", `{"config":` + strconvQuote(memoConfig) + `}`},
		{"the config under another member", `{"context":{"config":` + memoConfig + `},"config":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warm(t, memoConfig)
			agree(t, []byte(tt.request))
		})
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestConfigMemoRemembersOnlyWhatPassed: a config that fails is not
// remembered, nor is a short one or a number.
func TestConfigMemoRemembersOnlyWhatPassed(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   string // configMemo.b after, from memoConfig
	}{
		{"a valid long config", memoConfig, memoConfig},
		{"an invalid long config", memoConfig[:len(memoConfig)-1] + `]`, memoConfig},
		{"a short config", `{"policies":[]}`, memoConfig},
		{"a long number", strings.Repeat("1", 300), memoConfig},
		{"a long string", strconvQuote(memoConfig), strconvQuote(memoConfig)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warm(t, memoConfig)
			var r abi.Request
			_ = DecodeRequest([]byte(`{"config":`+tt.config+`}`), &r)
			assert.Equal(t, tt.want, string(configMemo.b))
		})
	}
}

// FuzzConfigMemo checks requests against encoding/json with a config
// remembered, seeded with requests that hold it, start with it, or hold
// it changed.
func FuzzConfigMemo(f *testing.F) {
	f.Add([]byte(`{"config":` + memoConfig + `}`))
	f.Add([]byte(`{"config":` + memoConfig + `,"stage":"s"}`))
	f.Add([]byte(`{"config":` + memoConfig[:len(memoConfig)-2] + `}`))
	f.Add([]byte(`{"config":` + memoConfig + `]}`))
	f.Add([]byte(`{"config":` + strings.Replace(memoConfig, `\n`, `\u`, 1) + `}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		warm(t, memoConfig)
		agree(t, b)
	})
}
