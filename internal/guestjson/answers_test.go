package guestjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agreeAs checks Decode and DecodeEnvelope for T against json.Unmarshal on
// b: the same value, or both an error (typed).
func agreeAs[T any](t *testing.T, b []byte) {
	t.Helper()
	check := func(what string, wantErr, gotErr error, want, got any) {
		t.Helper()
		if wantErr != nil || gotErr != nil {
			require.Equal(t, wantErr != nil, gotErr != nil, "%s %T %q: encoding/json %v, guestjson %v", what, want, b, wantErr, gotErr)
			require.True(t, errors.Is(gotErr, ErrSyntax) || errors.Is(gotErr, ErrType), "untyped error %v", gotErr)
			return
		}
		require.Equal(t, want, got, "%s %T %q", what, want, b)
	}
	var want, got T
	wantErr := json.Unmarshal(b, &want)
	ok, gotErr := Decode(b, &got)
	require.True(t, ok, "Decode knows %T", want)
	check("value", wantErr, gotErr, want, got)

	var wantEnv, gotEnv Envelope[T]
	wantErr = json.Unmarshal(b, &wantEnv)
	ok, gotErr = DecodeEnvelope(b, &gotEnv)
	require.True(t, ok, "DecodeEnvelope knows %T", want)
	check("envelope", wantErr, gotErr, wantEnv, gotEnv)
}

// agreeAnswers checks every answer type this package decodes on b, bare
// and in an envelope.
func agreeAnswers(t *testing.T, b []byte) {
	t.Helper()
	agreeAs[abi.CallAnswer](t, b)
	agreeAs[abi.CatalogGetAnswer](t, b)
	agreeAs[abi.SessionGetAnswer](t, b)
	agreeAs[abi.SchemaValidateAnswer](t, b)
	agreeAs[abi.QueryCapabilityAnswer](t, b)
	agreeAs[abi.QueryRowsAnswer](t, b)
}

// answerShapes are answers on every rule of the package doc, for each
// type, checked bare and in an envelope (an answer that is itself an
// envelope is checked as both); they seed the fuzz target.
var answerShapes = []string{
	// envelopes: result, error, both, neither, null, repeated, case variants
	`{"result":{"found":false}}`, `{"error":{"code":"capability_denied","message":"no"}}`, `{}`, `null`,
	`{"result":null}`, `{"result":{"found":true},"result":null}`, `{"result":null,"result":{"found":true}}`,
	`{"error":null}`, `{"error":{"code":"a"},"error":{"message":"m"}}`, `{"ERROR":{"CODE":"c"},"Result":{"Found":true}}`,
	`{"result":{"found":true},"error":{"code":"unavailable"}}`, `{"result":{"tool":{"id":"a"}},"result":{"tool":{"name":"b"}}}`,
	`{"result":1}`, `{"result":"x"}`, `{"result":[]}`, `{"error":"x"}`, `{"error":{"code":1}}`, `{"result":{}} x`, `{"result":{}`,
	`{"résult":{"found":true}}`, `{"reſult":{"found":true}}`,
	// catalog.get
	`{"found":true,"tool":{"id":"ns:t","name":"t","aliases":["a","b"],"description":"d","input_schema":{"type":"object","properties":{"x":{"type":"integer"}}},"schema_digest":"ab","provenance":"p","source":"s","effect":"read_only","hints":{"read_only":true,"destructive":false,"idempotent":true,"open_world":false},"policy_digest":"cd"},"schema_omitted":false}`,
	`{"found":true,"tool":{"input_schema": { "type" : "object" } ,"input_schema":[1, 2]}}`, `{"tool":{"input_schema":null}}`,
	`{"tool":{"input_schema":{"a":}}}`, `{"tool":{"aliases":["a","b","c"]},"tool":{"aliases":["x"]}}`, `{"tool":{"aliases":[]}}`,
	`{"tool":{"aliases":null,"hints":null,"id":null}}`, `{"tool":{"hints":{"read_only":true}},"tool":{"hints":{"destructive":true}}}`,
	`{"tool":{"hints":{"read_only":"true"}}}`, `{"tool":{"hints":{"Read_Only":true,"OPEN_WORLD":true}}}`, `{"tool":{"aliases":[1]}}`,
	`{"found":1}`, `{"found":null,"schema_omitted":true}`, `{"Found":true,"FOUND":false}`, `{"tool":[]}`, `{"tool":"x"}`,
	`{"tool":{"ſchema_digest":"x","\u0049D":"y"}}`, `{"tool":{"description":"\ud83d\ude00\ud800\xff"}}`,
	// session.get
	`{"session":"s","known":true,"version":3,"core":{"schema_digest":"a","policy_digest":"b","provenance":"p"},"activation":{"grant":{"session":"s","tool":"t","catalog_generation":7,"schema_digest":"a","policy_digest":"b"},"provenance":"p"}}`,
	`{"version":-1}`, `{"version":1.5}`, `{"version":1e2}`, `{"version":18446744073709551615}`, `{"version":18446744073709551616}`,
	`{"version":"1"}`, `{"version":null,"core":null,"activation":null}`, `{"activation":{"grant":{"catalog_generation":-0}}}`,
	`{"activation":{"grant":{"tool":"a"}},"activation":{"grant":{"session":"b"}}}`, `{"activation":{"grant":null}}`,
	`{"core":{"provenance":"a"},"Core":{"schema_digest":"b"}}`, `{"known":"yes"}`,
	// schema.validate
	`{"found":true,"schema_digest":"d","valid":false,"findings":[{"pointer":"/a","keyword":"type","message":"m"},{"pointer":"","keyword":"required","message":"n"}],"truncated":true}`,
	`{"found":true,"valid":true,"findings":[]}`, `{"findings":null}`, `{"findings":[null,{}]}`, `{"findings":[{"pointer":1}]}`,
	`{"findings":[{"pointer":"a"},{"pointer":"b"}],"findings":[{"keyword":"k"}]}`, `{"valid":null,"truncated":0}`, `{"findings":{}}`,
	// query.rows: rows of any values, numbers as float64
	`{"rows":[{"id":"o1","total":12.5,"items":[1,2,{"a":null}],"paid":true,"n":null},{}]}`, `{"rows":[]}`, `{"rows":null}`,
	`{"rows":[null]}`, `{"rows":[{"a":1}],"rows":[{"b":2},{"c":3}]}`, `{"rows":[{"a":1,"a":2,"A":3}]}`, `{"rows":[{"x":1e400}]}`,
	`{"rows":[{"x":-0,"y":1e-400,"z":123456789012345678901234567890,"w":-1.5E+3}]}`, `{"rows":[1]}`, `{"rows":{}}`, `{"ROWS":[{"k":"v"}]}`,
	// query.capability, with operands in every form
	`{"found":true,"capability":{"domain":"retail","name":"cancel_pending_order","tools":["cancel_pending_order","cancel"],"kind":"action","parameters":["order_id","reason"],"preconditions":[{"id":"order_is_pending","view":"order_state","bind":{"order_id":{"kind":"param","name":"order_id"}},"deny_when":{"field":"status","not_equals":"pending"},"message":"m"},{"id":"cancel_reason_allowed","deny_when":{"field":"reason","not_in":["no longer needed","ordered by mistake"]},"message":"n"}],"local_time_offset":"-05:00"}}`,
	`{"capability":{"preconditions":[{"deny_when":{"not":{"field":"status","contains":"pending"}}}]}}`,
	`{"capability":{"preconditions":[{"require":{"match":{"all_of":[{"field":"a","gt":1},{"any_of":[{"field":"b","lte":{"kind":"now","offset":"-24h"}},{"field":"c","exists":false}]}]}}}]}}`,
	`{"capability":{"preconditions":[{"bind":{"a":null,"b":1,"c":[1],"d":{"x":1},"e":{"kind":"literal"},"f":{"kind":"literal","value":null}}}]}}`,
	`{"capability":{"preconditions":[{"bind":{"g":{"kind":"param","name":"p","extra":1}}}]}}`,
	`{"capability":{"preconditions":[{"bind":{"a":{"kind":"param","name":"x"}}},{"bind":null}],"preconditions":[{"bind":{"b":2}}]}}`,
	`{"capability":{"preconditions":[{"bind":{"a":{"kind":"param","name":"x"},"a":{"kind":"now"}}}]}}`,
	`{"capability":{"preconditions":[{"bind":{"a":{"kind":1}}}]}}`, `{"capability":{"preconditions":[{"bind":[]}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"equals":null,"in":{"kind":"param"},"exists":null,"not":null,"all_of":null}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"literal","value":1,"Value":2}}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"gte":{"kind":"param","name":"a"}},"DENY_WHEN":{"lt":3}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"exists":"yes"}}]}}`, `{"capability":{"preconditions":[{"require":{"match":null}}]}}`,
	`{"capability":{"tools":null,"parameters":[],"kind":null}}`, `{"capability":{"tools":["a"]},"capability":{"name":"n"}}`,
	`{"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"param","name":"a"}}}]},"capability":{"preconditions":[{"deny_when":{"equals":7}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"x"}}}]},"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"y"}}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"param","name":"a"}}}]},"capability":{"preconditions":[{"deny_when":{"equals":null}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"param","name":"a"},"equals":"lit"}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"not":{"not":{"field":"x"}}},"deny_when":{"not":{"equals":1}}}]}}`,
	`{"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"param","name":"a"}}}]},"capability":{"preconditions":[{"deny_when":{"equals":{"kind":"literal"}}}]}}`,
}

func TestAnswersAgreeWithEncodingJSON(t *testing.T) {
	for _, s := range answerShapes {
		t.Run(s, func(t *testing.T) {
			b := readShape(t, s)
			agreeAnswers(t, b)
			// Each shape as the result of an envelope, too.
			agreeAnswers(t, []byte(`{"result":`+s+`}`))
		})
	}
}

// TestRealAnswers: the catalog.get answers of a real static-verify run,
// first and warm, decode as encoding/json decodes them.
func TestRealAnswers(t *testing.T) {
	for _, name := range []string{"@answers.json", "@answers-warm.json"} {
		var list []json.RawMessage
		require.NoError(t, json.Unmarshal(readShape(t, name), &list))
		require.NotEmpty(t, list)
		for _, a := range list {
			agreeAs[abi.CatalogGetAnswer](t, a)
			agreeAs[abi.CallAnswer](t, a)
		}
	}
}

func TestAnswerDepthLimit(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			// n levels in all: the envelope, the answer, the rows
			// array, a row, n-4 more.
			b := `{"result":{"rows":[{"a":` + strings.Repeat(open, n-4) + `1` + strings.Repeat(close, n-4) + `}]}}`
			agreeAnswers(t, []byte(b))
			var env Envelope[abi.QueryRowsAnswer]
			_, err := DecodeEnvelope([]byte(b), &env)
			assert.Equal(t, n > maxDepth, err != nil, "depth %d %s: %v", n, open, err)
		}
	}
}

func TestDecodeOtherTypes(t *testing.T) {
	var l abi.CatalogListAnswer
	ok, err := Decode([]byte(`{"generation":1}`), &l)
	assert.False(t, ok)
	assert.NoError(t, err)
	assert.Zero(t, l, "nothing decoded")
	var env Envelope[abi.CatalogListAnswer]
	ok, err = DecodeEnvelope([]byte(`{"result":{"generation":1}}`), &env)
	assert.False(t, ok)
	assert.NoError(t, err)
	assert.Nil(t, env.Result)
}

func TestAnswerErrorNamesTheField(t *testing.T) {
	tests := []struct {
		in    string
		field string
		kind  error
	}{
		{`{"result":{"tool":{"aliases":["a",2]}}}`, "result.tool.aliases[1]", ErrType},
		{`{"result":{"rows":[{},{"a":[1,}]}]}`, "result.rows[1].a[1]", ErrSyntax},
		{`{"result":{"capability":{"preconditions":[{"bind":{"x":{"kind":"param","name":1}}}]}}}`, "result.capability.preconditions[0].bind.x", ErrType},
		{`{"result":{"activation":{"grant":{"catalog_generation":-1}}}}`, "result.activation.grant.catalog_generation", ErrType},
		{`{"error":{"code":true}}`, "error.code", ErrType},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var errs []error
			var cg Envelope[abi.CatalogGetAnswer]
			_, err := DecodeEnvelope([]byte(tt.in), &cg)
			errs = append(errs, err)
			var qr Envelope[abi.QueryRowsAnswer]
			_, err = DecodeEnvelope([]byte(tt.in), &qr)
			errs = append(errs, err)
			var qc Envelope[abi.QueryCapabilityAnswer]
			_, err = DecodeEnvelope([]byte(tt.in), &qc)
			errs = append(errs, err)
			var sg Envelope[abi.SessionGetAnswer]
			_, err = DecodeEnvelope([]byte(tt.in), &sg)
			errs = append(errs, err)
			// The type the input is about names the field; which one
			// that is does not matter here.
			var named bool
			for _, err := range errs {
				var e *Error
				if errors.As(err, &e) && e.Field == tt.field {
					named = true
					assert.ErrorIs(t, err, tt.kind)
				}
			}
			assert.True(t, named, "no error names %s: %v", tt.field, errs)
		})
	}
}

// answerSeeds are the seeds FuzzAgreesWithEncodingJSON adds for the
// answers: the shapes, and the first real answers of each run.
func answerSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, s := range answerShapes {
		out = append(out, readShape(f, s))
	}
	for _, name := range []string{"@answers.json", "@answers-warm.json"} {
		var list []json.RawMessage
		require.NoError(f, json.Unmarshal(readShape(f, name), &list))
		for _, a := range list[:min(3, len(list))] {
			out = append(out, a)
		}
	}
	return out
}

// agreeValue checks DecodeValue against a json.Decoder with UseNumber:
// the same value, or both refuse b (the Decoder's refusal including data
// after the value).
func agreeValue(t *testing.T, b []byte) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var want any
	wantErr := dec.Decode(&want)
	if wantErr == nil && strings.TrimLeft(string(b[dec.InputOffset():]), " \t\r\n") != "" {
		wantErr = errors.New("data after the value")
	}
	got, gotErr := DecodeValue(b)
	if wantErr != nil || gotErr != nil {
		require.Equal(t, wantErr != nil, gotErr != nil, "%q: encoding/json %v, guestjson %v", b, wantErr, gotErr)
		require.True(t, errors.Is(gotErr, ErrSyntax) || errors.Is(gotErr, ErrType), "untyped error %v", gotErr)
		return
	}
	require.Equal(t, want, got, "%q", b)
}

func TestValueAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{`{}`, ` {"a": 1, "b": [1.5, -2e3, 12345678901234567890], "c": {"d": null, "e": true}} `,
		`"x\u00e9\ud800"`, `0`, `-0.0e+1`, `[]`, `{"a":1}x`, `{"a":01}`, `[1,]`, `{"a" 1}`, "\"\xff\"", `1e999`} {
		agreeValue(t, []byte(s))
	}
	for _, s := range shapes {
		agreeValue(t, readShape(t, s))
	}
}
