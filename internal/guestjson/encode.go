package guestjson

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
)

// EncodeResponse encodes a gate's response as json.Marshal(r) does, byte
// for byte, without reflection for the members and evidence values gates
// commonly use (strings, booleans, numbers, []string, []any and
// map[string]any); any other value is encoded by encoding/json in place,
// and on any error the response is encoded by json.Marshal as a whole, so
// the bytes and the error are always encoding/json's.
func EncodeResponse(r abi.Response) ([]byte, error) {
	e := encoder{b: make([]byte, 0, 512)}
	e.response(r)
	if e.err != nil {
		return json.Marshal(r)
	}
	return e.b, nil
}

type encoder struct {
	b   []byte
	err error
}

func (e *encoder) response(r abi.Response) {
	e.b = append(e.b, `{"verdict":`...)
	e.str(string(r.Verdict))
	if r.Basis != "" {
		e.b = append(e.b, `,"basis":`...)
		e.str(r.Basis)
	}
	if r.Reason != "" {
		e.b = append(e.b, `,"reason":`...)
		e.str(r.Reason)
	}
	if len(r.Findings) > 0 {
		e.b = append(e.b, `,"findings":[`...)
		for i, f := range r.Findings {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.finding(f)
		}
		e.b = append(e.b, ']')
	}
	if len(r.Evidence) > 0 {
		e.b = append(e.b, `,"evidence":`...)
		e.object(r.Evidence)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) finding(f abi.Finding) {
	e.b = append(e.b, `{"code":`...)
	e.str(f.Code)
	e.b = append(e.b, `,"severity":`...)
	e.str(string(f.Severity))
	if f.Tier != "" {
		e.b = append(e.b, `,"tier":`...)
		e.str(string(f.Tier))
	}
	e.b = append(e.b, `,"message":`...)
	e.str(f.Message)
	if f.ActionIndex != nil {
		e.b = append(e.b, `,"action_index":`...)
		e.b = strconv.AppendInt(e.b, int64(*f.ActionIndex), 10)
	}
	for _, m := range [...]struct{ name, v string }{{`,"action_id":`, f.ActionID}, {`,"path":`, f.Path},
		{`,"keyword":`, f.Keyword}, {`,"suggestion":`, f.Suggestion}} {
		if m.v != "" {
			e.b = append(e.b, m.name...)
			e.str(m.v)
		}
	}
	if len(f.Details) > 0 {
		e.b = append(e.b, `,"details":`...)
		e.object(f.Details)
	}
	e.b = append(e.b, '}')
}

// object encodes a map with its keys sorted, as encoding/json does.
func (e *encoder) object(m map[string]any) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.b = append(e.b, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.str(k)
		e.b = append(e.b, ':')
		e.value(m[k])
	}
	e.b = append(e.b, '}')
}

func (e *encoder) value(v any) {
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, "null"...)
	case string:
		e.str(x)
	case bool:
		e.b = strconv.AppendBool(e.b, x)
	case int:
		e.b = strconv.AppendInt(e.b, int64(x), 10)
	case int64:
		e.b = strconv.AppendInt(e.b, x, 10)
	case uint64:
		e.b = strconv.AppendUint(e.b, x, 10)
	case float64:
		e.float(x)
	case map[string]any:
		e.object(x)
	case []any:
		list(e, x, e.value)
	case []string:
		list(e, x, e.str)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			e.err = err
			return
		}
		e.b = append(e.b, b...)
	}
}

// list encodes a slice as encoding/json does: nil as null, each element
// with elem.
func list[T any](e *encoder, xs []T, elem func(T)) {
	if xs == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, x := range xs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		elem(x)
	}
	e.b = append(e.b, ']')
}

// float encodes as encoding/json's floatEncoder(64) does.
func (e *encoder) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.err = &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' { // e-09 as e-9
		n := len(e.b)
		if n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

const hexDigits = "0123456789abcdef"

// str encodes a string as encoding/json's appendString does with HTML
// escaping: ", \ and control characters escaped, <, > and & as \u003c,
// \u003e and \u0026, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func (e *encoder) str(s string) {
	b := append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	e.b = append(b, '"')
}

// EncodeSchemaValidateRequest encodes a schema.validate request, the
// host-call request a gate sends once per action, without reflection: the
// same members as json.Marshal(r), with r.Value written as it is (less
// surrounding whitespace) once checked to be one JSON value, where
// json.Marshal compacts it and escapes HTML characters, which mean nothing
// to the host. Decoded, the two encodings are the same request
// (FuzzSchemaValidateRequest). A value that is not one JSON value is
// refused with encoding/json's error. In a module, json.Marshal's
// reflection and its compaction of the value were an eighth of the
// static-verify gate's time.
func EncodeSchemaValidateRequest(r abi.SchemaValidateRequest) ([]byte, error) {
	b, ok := appendSchemaValidateRequest(make([]byte, 0, len(r.Value)+len(r.Tool)+len(r.SchemaDigest)+40), &r)
	if !ok {
		return json.Marshal(r)
	}
	return b, nil
}

// EncodeSchemaValidateManyRequest encodes a schema.validate_many request
// (minor 12) as EncodeSchemaValidateRequest encodes each of its items; on
// any item it cannot encode so, the whole request is json.Marshal's.
func EncodeSchemaValidateManyRequest(r abi.SchemaValidateManyRequest) ([]byte, error) {
	size := 12
	for i := range r.Items {
		size += len(r.Items[i].Value) + len(r.Items[i].Tool) + len(r.Items[i].SchemaDigest) + 41
	}
	b := append(make([]byte, 0, size), `{"items":`...)
	if r.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Items {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendSchemaValidateRequest(b, &r.Items[i]); !ok {
				return json.Marshal(r)
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendSchemaValidateRequest appends r's encoding to b; false when r.Value
// is not one JSON value or a string is not valid UTF-8, which json.Marshal
// then reports or replaces.
func appendSchemaValidateRequest(b []byte, r *abi.SchemaValidateRequest) ([]byte, bool) {
	value := []byte("null") // json.Marshal's encoding of a nil json.RawMessage
	if r.Value != nil {
		d := decoder{data: r.Value}
		d.ws()
		start := d.off
		err := d.skip()
		end := d.off
		if err == nil {
			d.ws()
			if d.off != len(d.data) {
				err = d.syntax("data after the value")
			}
		}
		if err != nil {
			return b, false
		}
		value = r.Value[start:end]
	}
	e := encoder{b: b}
	e.b = append(e.b, '{')
	if r.Tool != "" {
		e.b = append(e.b, `"tool":`...)
		e.str(r.Tool)
		e.b = append(e.b, ',')
	}
	if r.SchemaDigest != "" {
		e.b = append(e.b, `"schema_digest":`...)
		e.str(r.SchemaDigest)
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, `"value":`...)
	e.b = append(e.b, value...)
	e.b = append(e.b, '}')
	return e.b, e.err == nil
}

// EncodeHostRequest encodes a host-call request as the SDK sends it:
// abi.SchemaValidateRequest by EncodeSchemaValidateRequest,
// abi.SchemaValidateManyRequest by EncodeSchemaValidateManyRequest;
// abi.QueryRowsRequest (without an overlay) and abi.QueryCapabilityRequest,
// sent once per precondition and per tool, as json.Marshal does, byte for
// byte, without reflection; anything else, and on any error, by
// json.Marshal, whose bytes and error are then the answer.
func EncodeHostRequest(req any) ([]byte, error) {
	switch r := req.(type) {
	case abi.SchemaValidateRequest:
		return EncodeSchemaValidateRequest(r)
	case abi.SchemaValidateManyRequest:
		return EncodeSchemaValidateManyRequest(r)
	case abi.QueryCapabilityRequest:
		e := encoder{b: make([]byte, 0, len(r.Domain)+len(r.Name)+24)}
		e.b = append(e.b, `{"domain":`...)
		e.str(r.Domain)
		e.b = append(e.b, `,"name":`...)
		e.str(r.Name)
		e.b = append(e.b, '}')
		return e.b, nil
	case abi.QueryRowsRequest:
		if len(r.Overlay) > 0 {
			break
		}
		e := encoder{b: make([]byte, 0, 256)}
		e.b = append(e.b, `{"domain":`...)
		e.str(r.Domain)
		if r.View != "" {
			e.b = append(e.b, `,"view":`...)
			e.str(r.View)
		}
		if r.Capability != "" {
			e.b = append(e.b, `,"capability":`...)
			e.str(r.Capability)
		}
		e.b = append(e.b, `,"params":`...)
		e.value(r.Params)
		e.b = append(e.b, '}')
		if e.err == nil {
			return e.b, nil
		}
	}
	return json.Marshal(req)
}

// EncodeAnswer encodes a host-call answer the host sends on every run as
// json.Marshal(v) does, byte for byte, without reflection: abi.QueryRowsAnswer
// (rows of the values EncodeResponse encodes without reflection; any other
// value by encoding/json in place), abi.SchemaValidateAnswer and
// abi.SchemaValidateManyAnswer. For any other type, and on any error, it
// returns false and the caller encodes with json.Marshal, whose bytes and
// error are then the answer.
func EncodeAnswer(v any) ([]byte, bool) {
	e := encoder{}
	switch a := v.(type) {
	case abi.QueryRowsAnswer:
		e.b = make([]byte, 0, 64+64*len(a.Rows))
		e.b = append(e.b, `{"rows":`...)
		list(&e, a.Rows, e.object)
		e.b = append(e.b, '}')
	case abi.SchemaValidateAnswer:
		e.b = make([]byte, 0, 128+96*len(a.Findings))
		e.schemaAnswer(&a)
	case abi.SchemaValidateManyAnswer:
		e.b = make([]byte, 0, 16+128*len(a.Items))
		e.b = append(e.b, `{"items":`...)
		list(&e, a.Items, func(x abi.SchemaValidateAnswer) { e.schemaAnswer(&x) })
		e.b = append(e.b, '}')
	default:
		return nil, false
	}
	if e.err != nil {
		return nil, false
	}
	return e.b, true
}

func (e *encoder) schemaAnswer(a *abi.SchemaValidateAnswer) {
	e.b = append(e.b, `{"found":`...)
	e.b = strconv.AppendBool(e.b, a.Found)
	if a.SchemaDigest != "" {
		e.b = append(e.b, `,"schema_digest":`...)
		e.str(a.SchemaDigest)
	}
	e.b = append(e.b, `,"valid":`...)
	e.b = strconv.AppendBool(e.b, a.Valid)
	if len(a.Findings) > 0 {
		e.b = append(e.b, `,"findings":[`...)
		for i, f := range a.Findings {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, `{"pointer":`...)
			e.str(f.Pointer)
			e.b = append(e.b, `,"keyword":`...)
			e.str(f.Keyword)
			e.b = append(e.b, `,"message":`...)
			e.str(f.Message)
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	if a.Truncated {
		e.b = append(e.b, `,"truncated":true`...)
	}
	e.b = append(e.b, '}')
}

// EncodeCallAnswer is abi.EncodeCallAnswer, byte for byte, with the
// answers EncodeAnswer knows encoded without reflection: what the host
// writes for every host call.
func EncodeCallAnswer(v any, err error) []byte {
	if err == nil {
		if b, ok := EncodeAnswer(v); ok {
			return abi.EncodeCallResultJSON(b)
		}
	}
	return abi.EncodeCallAnswer(v, err)
}
