package host

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
)

// decodeResponseReflect is the answer's decoding as encoding/json does it
// into an abi.Response (numbers kept as json.Number), after the same
// checks: the oracle responseOf is held to.
func decodeResponseReflect(out []byte) (abi.Response, error) {
	if err := abischema.Validate(abi.SchemaResponse, out); err != nil {
		return abi.Response{}, err
	}
	if err := abischema.CheckNames(out, abischema.ResponseStructs); err != nil {
		return abi.Response{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var resp abi.Response
	if err := dec.Decode(&resp); err != nil {
		return abi.Response{}, err
	}
	return resp, nil
}

var responseSeeds = []string{
	`{"verdict":"accepted","evidence":{"a":1}}`,
	`{"verdict":"accepted","evidence":{"a":{"b":[1,2.5,"x",null,true]}},"basis":"verified","findings":[]}`,
	`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","action_index":0}]}`,
	`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","action_index":1e2}]}`,
	`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","action_index":2.0}]}`,
	`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","action_index":-0}]}`,
	`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","action_index":99999999999999999999}]}`,
	`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","tier":"heuristic","message":"m\u00e9\ud800","action_id":"a","path":"/p/~0","keyword":"type","suggestion":"s","details":{"n":12345678901234567890},"extra":1}],"evidence":{}}`,
	`{"verdict":"inconclusive","reason":"gate_error"}`,
	`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m"}],"Verdict":"accepted"}`,
	`{"verdict":"accepted","evidence":{"a":1},"evidence":{"b":2}}`,
	`{"verdict":"accepted","evidence":{"n":1e9999999}}`,
	`{"verdict":"accepted","evidence":{"a":1}} x`,
	`{"verdict":"accepted","reason":"plugin_trap","evidence":{"a":1}}`,
	`[]`,
	`"accepted"`,
}

// TestResponseOfAgreesWithEncodingJSON: decoding an answer once, from the
// value the schema checked, gives what decoding it again with encoding/json
// gave, and refuses what that refused.
func TestResponseOfAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range responseSeeds {
		t.Run(s, func(t *testing.T) { sameResponse(t, []byte(s)) })
	}
}

func FuzzResponseOfAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameResponse(t, b) })
}

func sameResponse(t *testing.T, b []byte) {
	t.Helper()
	got, gerr := decodeResponse(b)
	want, werr := decodeResponseReflect(b)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: decodeResponse error %v, encoding/json error %v", b, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %#v\nwant %#v", b, got, want)
	}
	// Through the answer memo, whatever it holds from earlier inputs, and
	// again once it may hold these bytes: the same answer or refusal.
	for range 2 {
		held, herr := decodeAnswer(b, &oracleMemo)
		if (herr == nil) != (gerr == nil) || (herr != nil && herr.Error() != gerr.Error()) {
			t.Fatalf("%s: through the memo error %v, without %v", b, herr, gerr)
		}
		if herr == nil && !reflect.DeepEqual(got, held) {
			t.Fatalf("%s: through the memo\n got %#v\nwant %#v", b, held, got)
		}
	}
}

// oracleMemo is shared by every input sameResponse sees; benchMemo by
// the runs of BenchmarkDecodeResponse.
var oracleMemo, benchMemo answerMemo

// BenchmarkDecodeResponse: a gate's answer checked and decoded once
// (decodeResponse) against checked and then decoded again with
// encoding/json, as before, and decoded only, the memo holding it (held).
// The answer is the exec gate's acceptance.
func BenchmarkDecodeResponse(b *testing.B) {
	answer := []byte(`{"verdict":"accepted","basis":"verified","evidence":{"tool":"mcp.github:create_pull_request","schema_digest":"` +
		`9de6cace5e41e7a8e2ad19d09de6cace5e41e7a8e2ad19d09de6cace5e41e7a8","provenance":"mcp_config{github}","checks":["known","activated","pinned","schema","effect"],"session_version":3}}`)
	for _, bc := range []struct {
		name   string
		decode func([]byte) (abi.Response, error)
	}{
		{"once", decodeResponse},
		{"twice", decodeResponseReflect},
		{"held", func(b []byte) (abi.Response, error) { return decodeAnswer(b, &benchMemo) }}, // an answer the memo holds
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.decode(answer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
