package guestjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
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

// decodeOne decodes b as a json.Decoder configured by opt decodes one
// value, refusing anything but whitespace after it, as this package does.
func decodeOne(b []byte, v any, opt func(*json.Decoder)) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	opt(dec)
	err := dec.Decode(v)
	if err == nil && strings.TrimLeft(string(b[dec.InputOffset():]), " \t\r\n") != "" {
		err = errors.New("data after the value")
	}
	return err
}

// sameResult requires encoding/json's and this package's results to
// agree: both refused (this package with a typed error), or both equal.
func sameResult(t *testing.T, what string, b []byte, want, got any, wantErr, gotErr error) {
	t.Helper()
	if wantErr != nil || gotErr != nil {
		require.Equal(t, wantErr != nil, gotErr != nil, "%s %q: encoding/json %v, guestjson %v", what, b, wantErr, gotErr)
		require.True(t, errors.Is(gotErr, ErrSyntax) || errors.Is(gotErr, ErrType), "untyped error %v", gotErr)
		return
	}
	require.Equal(t, want, got, "%s %q", what, b)
}

// agreeStrictAs checks DecodeStrict on b against a json.Decoder with
// DisallowUnknownFields that also refuses data after the value.
func agreeStrictAs[T any](t *testing.T, b []byte) {
	t.Helper()
	var want, got T
	wantErr := decodeOne(b, &want, (*json.Decoder).DisallowUnknownFields)
	ok, gotErr := DecodeStrict(b, &got)
	require.True(t, ok, "DecodeStrict knows %T", want)
	sameResult(t, fmt.Sprintf("strict %T", want), b, want, got, wantErr, gotErr)
}

// agreeAny checks DecodeAny on b against json.Unmarshal into an any.
func agreeAny(t *testing.T, b []byte) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal(b, &want)
	got, gotErr := DecodeAny(b)
	sameResult(t, "any", b, want, got, wantErr, gotErr)
}

// agreeAnswers checks every answer type this package decodes on b, bare
// and in an envelope, and strictly.
func agreeAnswers(t *testing.T, b []byte) {
	t.Helper()
	agreeAs[abi.CallAnswer](t, b)
	agreeAs[abi.CatalogGetAnswer](t, b)
	agreeAs[abi.SessionGetAnswer](t, b)
	agreeAs[abi.SchemaValidateAnswer](t, b)
	agreeAs[abi.SchemaValidateManyAnswer](t, b)
	agreeAs[abi.QueryCapabilityAnswer](t, b)
	agreeAs[abi.QueryRowsAnswer](t, b)
	agreeAs[abi.QueryRowsRequest](t, b)
	agreeAs[abi.SchemaValidateRequest](t, b)
	agreeAs[abi.SchemaValidateManyRequest](t, b)
	agreeStrictAs[abi.CallAnswer](t, b)
	agreeStrictAs[abi.CatalogGetAnswer](t, b)
	agreeStrictAs[abi.SessionGetAnswer](t, b)
	agreeStrictAs[abi.SchemaValidateAnswer](t, b)
	agreeStrictAs[abi.SchemaValidateManyAnswer](t, b)
	agreeStrictAs[abi.QueryCapabilityAnswer](t, b)
	agreeStrictAs[abi.QueryRowsAnswer](t, b)
	agreeStrictAs[abi.QueryRowsRequest](t, b)
	agreeStrictAs[abi.SchemaValidateRequest](t, b)
	agreeStrictAs[abi.SchemaValidateManyRequest](t, b)
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
	// schema.validate_many
	`{"items":[{"found":true,"schema_digest":"d","valid":true},{"found":false,"valid":false},{"found":true,"valid":false,"findings":[{"pointer":"/a","keyword":"type","message":"m"}],"truncated":true}]}`,
	`{"items":[]}`, `{"items":null}`, `{"items":[null,{}]}`, `{"items":[{"found":"yes"}]}`, `{"items":{}}`, `{"Items":[{"Valid":true}]}`,
	`{"items":[{"found":true}],"items":[{"valid":true},{"valid":false}]}`, `{"items":[{"findings":[{"pointer":1}]}]}`, `{"items":[{"extra":1}]}`,
	// host-call requests: query.rows, schema.validate, schema.validate_many
	`{"domain":"retail","view":"order_state","params":{"order_id":"#W1","n":1.5,"l":[1,null]},"overlay":[{"collection":"orders","id":"o1","set":{"status":"paid","a.b":{"c":1}}}]}`,
	`{"domain":"d","capability":"c","params":null,"overlay":null}`, `{"params":{"a":1,"a":2},"params":{"b":3}}`, `{"overlay":[null,{}]}`,
	`{"overlay":[{"set":{"x":1}},{"set":null}],"overlay":[{"id":"z"}]}`, `{"Domain":"D","VIEW":"v","Params":{"K":1}}`, `{"params":[]}`,
	`{"overlay":{}}`, `{"overlay":[{"set":[]}]}`, `{"domain":1}`, `{"params":{"x":1e400}}`,
	`{"tool":"t","value":{"a":[1,2]}}`, `{"schema_digest":"d","value":null}`, `{"tool":"t","value":{"a":}}`, `{"value":1,"value":[2]}`,
	`{"items":[{"tool":"t","value":{}},{"schema_digest":"d","value":[1]}]}`, `{"items":[null,{"Tool":"x"}]}`, `{"items":[{"value":1}],"items":[{"tool":"y"}]}`,
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
	var want any
	wantErr := decodeOne(b, &want, (*json.Decoder).UseNumber)
	got, gotErr := DecodeValue(b)
	sameResult(t, "value", b, want, got, wantErr, gotErr)
}

func TestValueAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{`{}`, ` {"a": 1, "b": [1.5, -2e3, 12345678901234567890], "c": {"d": null, "e": true}} `,
		`"x\u00e9\ud800"`, `0`, `-0.0e+1`, `[]`, `{"a":1}x`, `{"a":01}`, `[1,]`, `{"a" 1}`, "\"\xff\"", `1e999`} {
		agreeValue(t, []byte(s))
		agreeAny(t, []byte(s))
	}
	for _, s := range shapes {
		agreeValue(t, readShape(t, s))
		agreeAny(t, readShape(t, s))
	}
}

// A strict decode refuses a member no field has, at any depth of the
// answer's structs, and takes what the plain decode takes otherwise.
func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"found":true,"capability":{"name":"t","preconditions":[]}}`, true},
		{`{"found":true,"FOUND":false}`, true}, // case folding matches, as encoding/json's
		{`{"found":true,"newer":1}`, false},
		{`{"found":true,"capability":{"name":"t","preconditions":[{"id":"p","when_newer":{}}]}}`, false},
		{`{"found":true} x`, false},
	} {
		var a abi.QueryCapabilityAnswer
		ok, err := DecodeStrict([]byte(tc.in), &a)
		require.True(t, ok)
		require.Equal(t, tc.want, err == nil, "%s: %v", tc.in, err)
		agreeStrictAs[abi.QueryCapabilityAnswer](t, []byte(tc.in))
	}
	var rows abi.QueryRowsAnswer
	_, err := DecodeStrict([]byte(`{"rows":[{"any":"member","of":{"a":"row"}}]}`), &rows)
	require.NoError(t, err, "a row is a map: its members are not fields")
}

// fullDoc writes a JSON document of typ with every member encoding/json
// knows, at every depth (a type met again inside itself is {}), so that a
// field left out of a codec shows as an unknown member to DecodeStrict.
func fullDoc(typ reflect.Type, seen map[reflect.Type]bool) string {
	switch typ {
	case reflect.TypeFor[abi.Operand]():
		return `1` // a literal
	case reflect.TypeFor[abi.ForEach]():
		return `{"param":"p","as":["x"]}`
	case reflect.TypeFor[json.RawMessage]():
		return `{"raw":[true]}`
	}
	if reflect.PointerTo(typ).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		panic("fullDoc: teach me a document of " + typ.String())
	}
	switch typ.Kind() {
	case reflect.String:
		return `"x"`
	case reflect.Bool:
		return `true`
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Uint32, reflect.Int32:
		return `1`
	case reflect.Float64:
		return `1.5`
	case reflect.Interface:
		return `{"a":[1,"b",null]}`
	case reflect.Pointer:
		return fullDoc(typ.Elem(), seen)
	case reflect.Slice:
		return `[` + fullDoc(typ.Elem(), seen) + `]`
	case reflect.Map:
		return `{"k":` + fullDoc(typ.Elem(), seen) + `}`
	case reflect.Struct:
		if seen[typ] {
			return `{}`
		}
		seen[typ] = true
		defer delete(seen, typ)
		var members []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			members = append(members, strconv.Quote(name)+":"+fullDoc(f.Type, seen))
		}
		return `{` + strings.Join(members, ",") + `}`
	}
	panic("fullDoc: teach me " + typ.String())
}

// Every codec knows every field of its type, at every depth: an answer
// with all of them decodes strictly, to what encoding/json decodes. (A
// field a codec left out was skipped by Decode, and the agreement fuzz
// found it only if it wrote that member by chance.)
func TestCodecsKnowEveryField(t *testing.T) {
	check := func(name string, doc string, strict func([]byte) (any, error), plain func([]byte) (any, error)) {
		t.Helper()
		want, err := plain([]byte(doc))
		require.NoError(t, err, "%s: encoding/json refuses the document %s", name, doc)
		got, err := strict([]byte(doc))
		require.NoError(t, err, "%s: %s", name, doc)
		require.Equal(t, want, got, name)
	}
	codec := func(name string, typ reflect.Type, strict func([]byte) (any, error), plain func([]byte) (any, error)) {
		check(name, fullDoc(typ, map[reflect.Type]bool{}), strict, plain)
	}
	codec("CallAnswer", reflect.TypeFor[abi.CallAnswer](), strictAs[abi.CallAnswer], plainAs[abi.CallAnswer])
	codec("CatalogGetAnswer", reflect.TypeFor[abi.CatalogGetAnswer](), strictAs[abi.CatalogGetAnswer], plainAs[abi.CatalogGetAnswer])
	codec("SessionGetAnswer", reflect.TypeFor[abi.SessionGetAnswer](), strictAs[abi.SessionGetAnswer], plainAs[abi.SessionGetAnswer])
	codec("SchemaValidateAnswer", reflect.TypeFor[abi.SchemaValidateAnswer](), strictAs[abi.SchemaValidateAnswer], plainAs[abi.SchemaValidateAnswer])
	codec("QueryCapabilityAnswer", reflect.TypeFor[abi.QueryCapabilityAnswer](), strictAs[abi.QueryCapabilityAnswer], plainAs[abi.QueryCapabilityAnswer])
	codec("QueryRowsAnswer", reflect.TypeFor[abi.QueryRowsAnswer](), strictAs[abi.QueryRowsAnswer], plainAs[abi.QueryRowsAnswer])
	codec("SchemaValidateManyAnswer", reflect.TypeFor[abi.SchemaValidateManyAnswer](), strictAs[abi.SchemaValidateManyAnswer], plainAs[abi.SchemaValidateManyAnswer])
	codec("QueryRowsRequest", reflect.TypeFor[abi.QueryRowsRequest](), strictAs[abi.QueryRowsRequest], plainAs[abi.QueryRowsRequest])
	codec("SchemaValidateRequest", reflect.TypeFor[abi.SchemaValidateRequest](), strictAs[abi.SchemaValidateRequest], plainAs[abi.SchemaValidateRequest])
	codec("SchemaValidateManyRequest", reflect.TypeFor[abi.SchemaValidateManyRequest](), strictAs[abi.SchemaValidateManyRequest], plainAs[abi.SchemaValidateManyRequest])
}

func strictAs[T any](b []byte) (any, error) {
	var v T
	_, err := DecodeStrict(b, &v)
	return v, err
}

func plainAs[T any](b []byte) (any, error) {
	var v T
	return v, json.Unmarshal(b, &v)
}
