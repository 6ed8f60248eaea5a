package sdk

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// scriptedHost answers catalog.get with the next scripted envelope and
// records the requests.
type scriptedHost struct {
	answers  []string
	requests []abi.CatalogGetRequest
}

func (h *scriptedHost) Log(Level, string) {}

func (h *scriptedHost) Call(op string, req []byte) ([]byte, error) {
	env, err := h.CallEnvelope(op, req)
	if err != nil {
		return nil, err
	}
	return DecodeAnswer(env)
}

func (h *scriptedHost) CallEnvelope(op string, req []byte) ([]byte, error) {
	var r abi.CatalogGetRequest
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, err
	}
	h.requests = append(h.requests, r)
	a := h.answers[0]
	h.answers = h.answers[1:]
	return []byte(a), nil
}

func TestCatalogGetOmitsKnownSchema(t *testing.T) {
	const d1 = "1111111111111111111111111111111111111111111111111111111111111111"
	const d2 = "2222222222222222222222222222222222222222222222222222222222222222"
	full := func(d, schema string) string {
		return `{"result":{"found":true,"tool":{"id":"x:t","name":"t","schema_digest":"` + d + `","input_schema":` + schema + `}}}`
	}
	omitted := func(d string) string {
		return `{"result":{"found":true,"tool":{"id":"x:t","name":"t","schema_digest":"` + d + `"},"schema_omitted":true}}`
	}
	tests := []struct {
		name       string
		answers    []string
		wantSchema string
		wantKnown  []string // known_schema_digest of each request
		wantErr    string
	}{
		{"first lookup sends no digest", []string{full(d1, `{"type":"object"}`)}, `{"type":"object"}`, []string{""}, ""},
		{"known digest: schema omitted, remembered one used", []string{omitted(d1)}, `{"type":"object"}`, []string{d1}, ""},
		{"schema changed: host sends the new one", []string{full(d2, `{"type":"array"}`)}, `{"type":"array"}`, []string{d1}, ""},
		{"omitted for a digest not held: ask again", []string{omitted(d1), full(d1, `{"type":"null"}`)}, `{"type":"null"}`, []string{d2, ""}, ""},
		{"omitted again without a digest: error", []string{omitted(d2), omitted(d2)}, "", []string{d1, ""}, "omitted though not known"},
	}
	schemas = schemaCache{m: map[string]knownSchema{}}
	for _, tc := range tests { // in order: each case starts from the cache the last left
		t.Run(tc.name, func(t *testing.T) {
			h := &scriptedHost{answers: tc.answers}
			tool, found, err := CatalogGet(h, "t")
			var known []string
			for _, r := range h.requests {
				known = append(known, r.KnownSchemaDigest)
			}
			assert.Equal(t, tc.wantKnown, known)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.True(t, strings.Contains(err.Error(), tc.wantErr), err.Error())
				assert.False(t, found)
				return
			}
			require.NoError(t, err)
			require.True(t, found)
			assert.JSONEq(t, tc.wantSchema, string(tool.InputSchema))
		})
	}
}

func TestCallSinglePassErrors(t *testing.T) {
	for _, tc := range []struct{ answer, want string }{
		{`{"error":{"code":"capability_denied","message":"no"}}`, "capability_denied: no"},
		{`{}`, "neither result nor error"},
		{`{"result":null}`, "neither result nor error"},
		{`not json`, "decode catalog.get answer"},
	} {
		h := &scriptedHost{answers: []string{tc.answer}}
		_, err := Call[abi.CatalogGetAnswer](h, abi.OpCatalogGet, abi.CatalogGetRequest{Name: "t"})
		require.Error(t, err, tc.answer)
		assert.Contains(t, err.Error(), tc.want)
	}
	h := &scriptedHost{answers: []string{`{"error":{"code":"capability_denied","message":"no"}}`}}
	_, err := Call[abi.CatalogGetAnswer](h, abi.OpCatalogGet, abi.CatalogGetRequest{Name: "t"})
	assert.ErrorIs(t, err, ErrCapabilityDenied)
}
