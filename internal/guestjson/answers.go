package guestjson

import (
	"encoding/json"

	"github.com/gatehost/gatehost/abi"
)

// The host-call answers (abi/SPEC.md §7) that gates decode on every run,
// with the same rules as the request and the proposal (see the package
// doc).

// Envelope is a call's answer envelope with its result decoded into T, as
// sdk.Call decodes it: {"result": T} or {"error": CallError}. Result is nil
// when the member is absent or null.
type Envelope[T any] struct {
	Result *T             `json:"result"`
	Error  *abi.CallError `json:"error"`
}

// Decode decodes b into *v as json.Unmarshal(b, v) would (see the package
// doc) when T is a type this package decodes: abi.CallAnswer,
// abi.CatalogGetAnswer, abi.SessionGetAnswer, abi.SchemaValidateAnswer,
// abi.SchemaValidateManyAnswer, abi.QueryCapabilityAnswer,
// abi.QueryRowsAnswer, or the host-call requests abi.QueryRowsRequest,
// abi.SchemaValidateRequest and abi.SchemaValidateManyRequest. For any
// other T it decodes nothing and returns false; the caller decodes with encoding/json.
// Errors wrap ErrSyntax or ErrType.
func Decode[T any](b []byte, v *T) (ok bool, err error) {
	c := codecOf[T]()
	if c == nil {
		return false, nil
	}
	d := decoder{data: b}
	return true, d.top(func() error { return c.value(&d, v) })
}

// DecodeStrict is Decode with unknown members refused at every depth of
// T's structs (a map's members are not fields), as a json.Decoder with
// DisallowUnknownFields decodes one value; unlike a Decoder, anything but
// whitespace after the value is refused. For a gate that must not drop
// what a newer host says: a member it does not know fails the call.
func DecodeStrict[T any](b []byte, v *T) (ok bool, err error) {
	c := codecOf[T]()
	if c == nil {
		return false, nil
	}
	d := decoder{data: b, strict: true}
	return true, d.top(func() error { return c.value(&d, v) })
}

// DecodeAny decodes b as one JSON value into an empty interface, as
// json.Unmarshal does: objects as map[string]any, arrays as []any,
// numbers as float64 (a number out of float64's range is refused).
func DecodeAny(b []byte) (any, error) {
	d := decoder{data: b}
	var v any
	err := d.top(func() (err error) { v, err = d.any(); return err })
	return v, err
}

// Kind names the JSON type of a value DecodeValue or DecodeAny returned
// (or encoding/json decoded into an any): null, boolean, number, string,
// array or object; "unknown" for any other Go value.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// DecodeValue decodes b as one JSON value into an empty interface, as a
// json.Decoder with UseNumber decodes it: objects as map[string]any,
// arrays as []any, numbers as json.Number; unlike a Decoder, anything but
// whitespace after the value is refused.
func DecodeValue(b []byte) (any, error) {
	d := decoder{data: b, numbers: true}
	var v any
	err := d.top(func() (err error) { v, err = d.any(); return err })
	return v, err
}

// DecodeEnvelope decodes an answer envelope into *env in one pass, as
// json.Unmarshal(b, env) would, when Decode knows T; otherwise it returns
// false and decodes nothing.
func DecodeEnvelope[T any](b []byte, env *Envelope[T]) (ok bool, err error) {
	c := codecOf[T]()
	if c == nil {
		return false, nil
	}
	d := decoder{data: b}
	return true, d.top(func() error { return c.envelope(&d, env) })
}

// codec is the decoder of a T and of an envelope holding one.
type codec[T any] struct {
	value    func(*decoder, *T) error
	envelope func(*decoder, *Envelope[T]) error
}

func newCodec[T any](value func(*decoder, *T) error) *codec[T] {
	return &codec[T]{value: value, envelope: structOf([]field[Envelope[T]]{
		{"result", func(d *decoder, e *Envelope[T]) error { return setPtr(d, &e.Result, value) }},
		{"error", func(d *decoder, e *Envelope[T]) error { return setPtr(d, &e.Error, decodeCallError) }},
	})}
}

// codecOf returns the codec of T, nil when there is none.
func codecOf[T any]() *codec[T] {
	var c any
	switch any((*T)(nil)).(type) {
	case *abi.CallAnswer:
		c = callAnswerCodec
	case *abi.CatalogGetAnswer:
		c = catalogGetCodec
	case *abi.SessionGetAnswer:
		c = sessionGetCodec
	case *abi.SchemaValidateAnswer:
		c = schemaValidateCodec
	case *abi.SchemaValidateManyAnswer:
		c = schemaValidateManyCodec
	case *abi.QueryCapabilityAnswer:
		c = queryCapabilityCodec
	case *abi.QueryRowsAnswer:
		c = queryRowsCodec
	case *abi.QueryRowsRequest:
		c = queryRowsRequestCodec
	case *abi.SchemaValidateRequest:
		c = schemaValidateRequestCodec
	case *abi.SchemaValidateManyRequest:
		c = schemaValidateManyRequestCodec
	default:
		return nil
	}
	return c.(*codec[T])
}

var (
	decodeCallError         func(*decoder, *abi.CallError) error
	decodeCondition         func(*decoder, *abi.Condition) error
	callAnswerCodec         *codec[abi.CallAnswer]
	catalogGetCodec         *codec[abi.CatalogGetAnswer]
	sessionGetCodec         *codec[abi.SessionGetAnswer]
	schemaValidateCodec     *codec[abi.SchemaValidateAnswer]
	schemaValidateManyCodec *codec[abi.SchemaValidateManyAnswer]
	queryCapabilityCodec    *codec[abi.QueryCapabilityAnswer]
	queryRowsCodec          *codec[abi.QueryRowsAnswer]

	// Host-call requests, which the host decodes on every call.
	queryRowsRequestCodec          *codec[abi.QueryRowsRequest]
	schemaValidateRequestCodec     *codec[abi.SchemaValidateRequest]
	schemaValidateManyRequestCodec *codec[abi.SchemaValidateManyRequest]
)

func init() {
	decodeCallError = structOf([]field[abi.CallError]{
		{"code", func(d *decoder, e *abi.CallError) error { return setString(d, &e.Code) }},
		{"message", func(d *decoder, e *abi.CallError) error { return setString(d, &e.Message) }},
	})
	callAnswerCodec = newCodec(structOf([]field[abi.CallAnswer]{
		{"result", func(d *decoder, a *abi.CallAnswer) error { return setRaw(d, &a.Result) }},
		{"error", func(d *decoder, a *abi.CallAnswer) error { return setPtr(d, &a.Error, decodeCallError) }},
	}))

	hints := structOf([]field[abi.ToolHints]{
		{"read_only", func(d *decoder, h *abi.ToolHints) error { return setBool(d, &h.ReadOnly) }},
		{"destructive", func(d *decoder, h *abi.ToolHints) error { return setBool(d, &h.Destructive) }},
		{"idempotent", func(d *decoder, h *abi.ToolHints) error { return setBool(d, &h.Idempotent) }},
		{"open_world", func(d *decoder, h *abi.ToolHints) error { return setBool(d, &h.OpenWorld) }},
	})
	tool := structOf([]field[abi.Tool]{
		{"id", func(d *decoder, t *abi.Tool) error { return setString(d, &t.ID) }},
		{"name", func(d *decoder, t *abi.Tool) error { return setString(d, &t.Name) }},
		{"aliases", func(d *decoder, t *abi.Tool) error { return setSlice(d, &t.Aliases, setString[string]) }},
		{"description", func(d *decoder, t *abi.Tool) error { return setString(d, &t.Description) }},
		{"input_schema", func(d *decoder, t *abi.Tool) error { return setRaw(d, &t.InputSchema) }},
		{"schema_digest", func(d *decoder, t *abi.Tool) error { return setString(d, &t.SchemaDigest) }},
		{"provenance", func(d *decoder, t *abi.Tool) error { return setString(d, &t.Provenance) }},
		{"source", func(d *decoder, t *abi.Tool) error { return setString(d, &t.Source) }},
		{"effect", func(d *decoder, t *abi.Tool) error { return setString(d, &t.Effect) }},
		{"hints", func(d *decoder, t *abi.Tool) error { return setPtr(d, &t.Hints, hints) }},
		{"policy_digest", func(d *decoder, t *abi.Tool) error { return setString(d, &t.PolicyDigest) }},
	})
	catalogGetCodec = newCodec(structOf([]field[abi.CatalogGetAnswer]{
		{"found", func(d *decoder, a *abi.CatalogGetAnswer) error { return setBool(d, &a.Found) }},
		{"tool", func(d *decoder, a *abi.CatalogGetAnswer) error { return setPtr(d, &a.Tool, tool) }},
		{"schema_omitted", func(d *decoder, a *abi.CatalogGetAnswer) error { return setBool(d, &a.SchemaOmitted) }},
	}))

	pin := structOf([]field[abi.SessionPin]{
		{"schema_digest", func(d *decoder, p *abi.SessionPin) error { return setString(d, &p.SchemaDigest) }},
		{"policy_digest", func(d *decoder, p *abi.SessionPin) error { return setString(d, &p.PolicyDigest) }},
		{"provenance", func(d *decoder, p *abi.SessionPin) error { return setString(d, &p.Provenance) }},
	})
	grant := structOf([]field[abi.SessionGrant]{
		{"session", func(d *decoder, g *abi.SessionGrant) error { return setString(d, &g.Session) }},
		{"tool", func(d *decoder, g *abi.SessionGrant) error { return setString(d, &g.Tool) }},
		{"catalog_generation", func(d *decoder, g *abi.SessionGrant) error { return setUint(d, &g.CatalogGeneration) }},
		{"schema_digest", func(d *decoder, g *abi.SessionGrant) error { return setString(d, &g.SchemaDigest) }},
		{"policy_digest", func(d *decoder, g *abi.SessionGrant) error { return setString(d, &g.PolicyDigest) }},
	})
	activation := structOf([]field[abi.SessionActivation]{
		{"grant", func(d *decoder, a *abi.SessionActivation) error { return grant(d, &a.Grant) }},
		{"provenance", func(d *decoder, a *abi.SessionActivation) error { return setString(d, &a.Provenance) }},
	})
	sessionGetCodec = newCodec(structOf([]field[abi.SessionGetAnswer]{
		{"session", func(d *decoder, a *abi.SessionGetAnswer) error { return setString(d, &a.Session) }},
		{"known", func(d *decoder, a *abi.SessionGetAnswer) error { return setBool(d, &a.Known) }},
		{"version", func(d *decoder, a *abi.SessionGetAnswer) error { return setUint(d, &a.Version) }},
		{"core", func(d *decoder, a *abi.SessionGetAnswer) error { return setPtr(d, &a.Core, pin) }},
		{"activation", func(d *decoder, a *abi.SessionGetAnswer) error { return setPtr(d, &a.Activation, activation) }},
	}))

	finding := structOf([]field[abi.SchemaFinding]{
		{"pointer", func(d *decoder, f *abi.SchemaFinding) error { return setString(d, &f.Pointer) }},
		{"keyword", func(d *decoder, f *abi.SchemaFinding) error { return setString(d, &f.Keyword) }},
		{"message", func(d *decoder, f *abi.SchemaFinding) error { return setString(d, &f.Message) }},
	})
	schemaValidate := structOf([]field[abi.SchemaValidateAnswer]{
		{"found", func(d *decoder, a *abi.SchemaValidateAnswer) error { return setBool(d, &a.Found) }},
		{"schema_digest", func(d *decoder, a *abi.SchemaValidateAnswer) error { return setString(d, &a.SchemaDigest) }},
		{"valid", func(d *decoder, a *abi.SchemaValidateAnswer) error { return setBool(d, &a.Valid) }},
		{"findings", func(d *decoder, a *abi.SchemaValidateAnswer) error { return setSlice(d, &a.Findings, finding) }},
		{"truncated", func(d *decoder, a *abi.SchemaValidateAnswer) error { return setBool(d, &a.Truncated) }},
	})
	schemaValidateCodec = newCodec(schemaValidate)
	schemaValidateManyCodec = newCodec(structOf([]field[abi.SchemaValidateManyAnswer]{
		{"items", func(d *decoder, a *abi.SchemaValidateManyAnswer) error { return setSlice(d, &a.Items, schemaValidate) }},
	}))

	overlayEffect := structOf([]field[abi.Effect]{
		{"collection", func(d *decoder, e *abi.Effect) error { return setString(d, &e.Collection) }},
		{"id", func(d *decoder, e *abi.Effect) error { return setString(d, &e.ID) }},
		{"set", func(d *decoder, e *abi.Effect) error { return setMap(d, &e.Set) }},
	})
	queryRowsRequestCodec = newCodec(structOf([]field[abi.QueryRowsRequest]{
		{"domain", func(d *decoder, r *abi.QueryRowsRequest) error { return setString(d, &r.Domain) }},
		{"view", func(d *decoder, r *abi.QueryRowsRequest) error { return setString(d, &r.View) }},
		{"capability", func(d *decoder, r *abi.QueryRowsRequest) error { return setString(d, &r.Capability) }},
		{"params", func(d *decoder, r *abi.QueryRowsRequest) error { return setMap(d, &r.Params) }},
		{"overlay", func(d *decoder, r *abi.QueryRowsRequest) error { return setSlice(d, &r.Overlay, overlayEffect) }},
	}))
	schemaValidateRequest := structOf([]field[abi.SchemaValidateRequest]{
		{"tool", func(d *decoder, r *abi.SchemaValidateRequest) error { return setString(d, &r.Tool) }},
		{"schema_digest", func(d *decoder, r *abi.SchemaValidateRequest) error { return setString(d, &r.SchemaDigest) }},
		{"value", func(d *decoder, r *abi.SchemaValidateRequest) error { return setRaw(d, &r.Value) }},
	})
	schemaValidateRequestCodec = newCodec(schemaValidateRequest)
	schemaValidateManyRequestCodec = newCodec(structOf([]field[abi.SchemaValidateManyRequest]{
		{"items", func(d *decoder, r *abi.SchemaValidateManyRequest) error {
			return setSlice(d, &r.Items, schemaValidateRequest)
		}},
	}))

	queryRowsCodec = newCodec(structOf([]field[abi.QueryRowsAnswer]{
		{"rows", func(d *decoder, a *abi.QueryRowsAnswer) error { return setSlice(d, &a.Rows, setMap) }},
	}))

	operand := func(d *decoder, o **abi.Operand) error { return setPtr(d, o, setUnmarshaler[abi.Operand]) }
	decodeCondition = structOf([]field[abi.Condition]{
		{"field", func(d *decoder, c *abi.Condition) error { return setString(d, &c.Field) }},
		{"equals", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Equals) }},
		{"not_equals", func(d *decoder, c *abi.Condition) error { return operand(d, &c.NotEquals) }},
		{"in", func(d *decoder, c *abi.Condition) error { return operand(d, &c.In) }},
		{"not_in", func(d *decoder, c *abi.Condition) error { return operand(d, &c.NotIn) }},
		{"exists", func(d *decoder, c *abi.Condition) error { return setPtr(d, &c.Exists, setBool) }},
		{"gt", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Gt) }},
		{"gte", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Gte) }},
		{"lt", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Lt) }},
		{"lte", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Lte) }},
		{"contains", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Contains) }},
		{"starts_with", func(d *decoder, c *abi.Condition) error { return operand(d, &c.StartsWith) }},
		{"under", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Under) }},
		{"value", func(d *decoder, c *abi.Condition) error { return operand(d, &c.Value) }},
		{"all_of", func(d *decoder, c *abi.Condition) error { return setSlice(d, &c.AllOf, decodeCondition) }},
		{"any_of", func(d *decoder, c *abi.Condition) error { return setSlice(d, &c.AnyOf, decodeCondition) }},
		{"not", func(d *decoder, c *abi.Condition) error { return setPtr(d, &c.Not, decodeCondition) }},
	})
	require := structOf([]field[abi.Require]{
		{"match", func(d *decoder, r *abi.Require) error { return setPtr(d, &r.Match, decodeCondition) }},
	})
	forEach := setUnmarshaler[abi.ForEach] // it reads its own "as"
	bind := func(d *decoder, m *map[string]abi.Operand) error { return setMapOf(d, m, setUnmarshaler[abi.Operand]) }
	let := structOf([]field[abi.Let]{
		{"for_each", func(d *decoder, l *abi.Let) error { return setPtr(d, &l.ForEach, forEach) }},
		{"view", func(d *decoder, l *abi.Let) error { return setString(d, &l.View) }},
		{"capability", func(d *decoder, l *abi.Let) error { return setString(d, &l.Capability) }},
		{"bind", func(d *decoder, l *abi.Let) error { return bind(d, &l.Bind) }},
		{"value", func(d *decoder, l *abi.Let) error { return setUnmarshaler(d, &l.Value) }},
	})
	lets := func(d *decoder, m *map[string]abi.Let) error { return setMapOf(d, m, let) }
	effect := structOf([]field[abi.DomainEffect]{
		{"collection", func(d *decoder, e *abi.DomainEffect) error { return setString(d, &e.Collection) }},
		{"id", func(d *decoder, e *abi.DomainEffect) error { return setUnmarshaler(d, &e.ID) }},
		{"view", func(d *decoder, e *abi.DomainEffect) error { return setString(d, &e.View) }},
		{"capability", func(d *decoder, e *abi.DomainEffect) error { return setString(d, &e.Capability) }},
		{"bind", func(d *decoder, e *abi.DomainEffect) error { return bind(d, &e.Bind) }},
		{"for_each", func(d *decoder, e *abi.DomainEffect) error { return setPtr(d, &e.ForEach, forEach) }},
		{"let", func(d *decoder, e *abi.DomainEffect) error { return lets(d, &e.Let) }},
		{"when", func(d *decoder, e *abi.DomainEffect) error { return setPtr(d, &e.When, decodeCondition) }},
		{"set", func(d *decoder, e *abi.DomainEffect) error { return bind(d, &e.Set) }},
	})
	precondition := structOf([]field[abi.DomainPrecondition]{
		{"id", func(d *decoder, p *abi.DomainPrecondition) error { return setString(d, &p.ID) }},
		{"view", func(d *decoder, p *abi.DomainPrecondition) error { return setString(d, &p.View) }},
		{"capability", func(d *decoder, p *abi.DomainPrecondition) error { return setString(d, &p.Capability) }},
		{"bind", func(d *decoder, p *abi.DomainPrecondition) error { return bind(d, &p.Bind) }},
		{"deny_when", func(d *decoder, p *abi.DomainPrecondition) error { return setPtr(d, &p.DenyWhen, decodeCondition) }},
		{"require", func(d *decoder, p *abi.DomainPrecondition) error { return setPtr(d, &p.Require, require) }},
		{"message", func(d *decoder, p *abi.DomainPrecondition) error { return setString(d, &p.Message) }},
		{"for_each", func(d *decoder, p *abi.DomainPrecondition) error { return setPtr(d, &p.ForEach, forEach) }},
		{"let", func(d *decoder, p *abi.DomainPrecondition) error { return lets(d, &p.Let) }},
	})
	capability := structOf([]field[abi.DomainCapability]{
		{"domain", func(d *decoder, c *abi.DomainCapability) error { return setString(d, &c.Domain) }},
		{"name", func(d *decoder, c *abi.DomainCapability) error { return setString(d, &c.Name) }},
		{"tools", func(d *decoder, c *abi.DomainCapability) error { return setSlice(d, &c.Tools, setString[string]) }},
		{"kind", func(d *decoder, c *abi.DomainCapability) error { return setString(d, &c.Kind) }},
		{"parameters", func(d *decoder, c *abi.DomainCapability) error {
			return setSlice(d, &c.Parameters, setString[string])
		}},
		{"preconditions", func(d *decoder, c *abi.DomainCapability) error {
			return setSlice(d, &c.Preconditions, precondition)
		}},
		{"effects", func(d *decoder, c *abi.DomainCapability) error { return setSlice(d, &c.Effects, effect) }},
		{"local_time_offset", func(d *decoder, c *abi.DomainCapability) error { return setString(d, &c.LocalTimeOffset) }},
	})
	queryCapabilityCodec = newCodec(structOf([]field[abi.QueryCapabilityAnswer]{
		{"found", func(d *decoder, a *abi.QueryCapabilityAnswer) error { return setBool(d, &a.Found) }},
		{"capability", func(d *decoder, a *abi.QueryCapabilityAnswer) error { return setPtr(d, &a.Capability, capability) }},
	}))
}

// unmarshaler is a type with its own UnmarshalJSON, such as abi.Operand.
type unmarshaler[T any] interface {
	*T
	json.Unmarshaler
}

// setUnmarshaler hands the value's bytes, null included, to the type's own
// UnmarshalJSON, as encoding/json does for a non-pointer value (a pointer
// to one is set to nil by null first: setPtr). Its error is a type error.
func setUnmarshaler[T any, P unmarshaler[T]](d *decoder, v *T) error {
	at := d.off
	if err := d.skip(); err != nil {
		return err
	}
	if err := P(v).UnmarshalJSON(d.data[at:d.off]); err != nil {
		return &Error{Offset: at, Reason: err.Error(), kind: ErrType}
	}
	return nil
}
