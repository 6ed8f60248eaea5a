package abi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

func TestEncodeCallEnvelopes(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"result", abi.EncodeCallResult(abi.CatalogGetAnswer{Found: false}), `{"result":{"found":false}}`},
		{"null result", abi.EncodeCallResult(nil), `{"result":null}`},
		{"error", abi.EncodeCallError(abi.ErrCodeBadRequest, `bad "x"`), `{"error":{"code":"bad_request","message":"bad \"x\""}}`},
		{"result that does not encode", abi.EncodeCallResult(math.Inf(1)), `{"error":{"code":"unavailable","message":"json: unsupported value: +Inf"}}`},
		{"unencodable type", abi.EncodeCallResult(make(chan int)), `{"error":{"code":"unavailable","message":"json: unsupported type: chan int"}}`},
		{"answer of a result", abi.EncodeCallAnswer([]int{1}, nil), `{"result":[1]}`},
		{"answer of a CallError", abi.EncodeCallAnswer(nil, fmt.Errorf("wrapped: %w", &abi.CallError{Code: abi.ErrCodeBadRequest, Message: "m"})), `{"error":{"code":"bad_request","message":"m"}}`},
		{"answer of another error", abi.EncodeCallAnswer("ignored", errors.New("disk gone")), `{"error":{"code":"unavailable","message":"disk gone"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, string(tt.got))
			var a abi.CallAnswer
			require.NoError(t, json.Unmarshal(tt.got, &a))
			assert.True(t, (a.Error == nil) != (a.Result == nil), "exactly one of result and error")
		})
	}
}

// EncodeCallResult writes the bytes of json.Marshal(CallAnswer{Result:
// json.Marshal(v)}), the encoding it replaced, byte for byte.
func TestEncodeCallResultAsMarshal(t *testing.T) {
	for _, v := range []any{
		nil, true, 1.5, "x<y>&z\u2028\u2029\"\\\x01", []any{}, map[string]any{},
		map[string]any{"b": []any{1e21, 1e-7, "<&>"}, "a": nil, "\u00e9": map[string]any{"z": 1}},
		abi.QueryRowsAnswer{Rows: []map[string]any{{"id": "o1", "total": 12.5}, {}}},
		abi.SchemaValidateAnswer{Found: true, SchemaDigest: "d", Findings: []abi.SchemaFinding{{Pointer: "/a", Keyword: "type", Message: "<m>"}}},
	} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		want, err := json.Marshal(abi.CallAnswer{Result: b})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(abi.EncodeCallResult(v)), "%#v", v)
	}
}
