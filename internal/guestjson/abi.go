package guestjson

import (
	"bytes"

	"github.com/gatehost/gatehost/abi"
)

// field is one field of a struct: its JSON name and its decoder.
type field[T any] struct {
	name string
	set  func(*decoder, *T) error
}

// structOf returns the decoder of a struct with the given fields: null
// leaves the struct unchanged; an object's members are decoded into their
// fields, unknown ones skipped (refused by a strict decoder). A member matches a field by exact name,
// else under case folding (bytes.EqualFold), as encoding/json matches
// (fold.go); no two names of one struct fold alike, so the order of the two
// passes decides nothing.
func structOf[T any](fs []field[T]) func(*decoder, *T) error {
	// byLen lists the fields by name length, so an exact match costs
	// one or two comparisons, not one per field.
	names := make([][]byte, len(fs))
	var byLen [][]int
	for i, f := range fs {
		names[i] = []byte(f.name)
		for len(byLen) <= len(f.name) {
			byLen = append(byLen, nil)
		}
		byLen[len(f.name)] = append(byLen[len(f.name)], i)
	}
	lookup := func(name []byte) int {
		if len(name) < len(byLen) {
			for _, i := range byLen[len(name)] {
				if string(name) == fs[i].name {
					return i
				}
			}
		}
		// Case folding can change a name's length (U+212A, the Kelvin
		// sign, is three bytes and folds to k): try every field.
		for i := range names {
			if bytes.EqualFold(name, names[i]) {
				return i
			}
		}
		return -1
	}
	return func(d *decoder, v *T) error {
		if isNull, err := d.null(); isNull || err != nil {
			return err
		}
		if d.peek() != '{' {
			return d.typeErr("object")
		}
		more, err := d.begin('}')
		for more && err == nil {
			var name []byte
			if name, err = d.name(); err != nil {
				break
			}
			if i := lookup(name); i >= 0 {
				err = fs[i].set(d, v)
			} else if d.strict {
				err = &Error{Offset: d.off, Reason: "unknown field", kind: ErrType}
			} else {
				err = d.skip()
			}
			if err != nil {
				return in(err, string(name))
			}
			more, err = d.next('}')
		}
		return err
	}
}

// DecodeRequest decodes a request envelope (abi/SPEC.md §5) into *r, as
// json.Unmarshal(b, r) would (see the package doc). Errors wrap ErrSyntax
// or ErrType.
func DecodeRequest(b []byte, r *abi.Request) error {
	d := decoder{data: b}
	return d.top(func() error { return decodeRequest(&d, r) })
}

// DecodeProposal decodes a proposal subject into *p, as json.Unmarshal(b,
// p) would (see the package doc). Errors wrap ErrSyntax or ErrType.
func DecodeProposal(b []byte, p *abi.Proposal) error {
	d := decoder{data: b}
	return d.top(func() error { return decodeProposal(&d, p) })
}

// DecodeToolCall decodes a tool_call subject into *c, as
// json.Unmarshal(b, c) would (see the package doc). Errors wrap ErrSyntax
// or ErrType.
func DecodeToolCall(b []byte, c *abi.ToolCall) error {
	d := decoder{data: b}
	return d.top(func() error { return decodeToolCall(&d, c) })
}

// configMemo remembers the last request's config (setRawMemo).
var configMemo rawMemo

var (
	decodeRequest  func(*decoder, *abi.Request) error
	decodeProposal func(*decoder, *abi.Proposal) error
	decodeToolCall func(*decoder, *abi.ToolCall) error
)

func init() {
	confirmation := structOf([]field[abi.Confirmation]{
		{"tool", func(d *decoder, c *abi.Confirmation) error { return setString(d, &c.Tool) }},
		{"token", func(d *decoder, c *abi.Confirmation) error { return setString(d, &c.Token) }},
	})
	principal := structOf([]field[abi.Principal]{
		{"issuer", func(d *decoder, p *abi.Principal) error { return setString(d, &p.Issuer) }},
		{"subject", func(d *decoder, p *abi.Principal) error { return setString(d, &p.Subject) }},
		{"method", func(d *decoder, p *abi.Principal) error { return setString(d, &p.Method) }},
		{"claims", func(d *decoder, p *abi.Principal) error { return setMap(d, &p.Claims) }},
	})
	context := structOf([]field[abi.Context]{
		{"catalog_generation", func(d *decoder, c *abi.Context) error { return setUint(d, &c.CatalogGeneration) }},
		{"session", func(d *decoder, c *abi.Context) error { return setString(d, &c.Session) }},
		{"session_digest", func(d *decoder, c *abi.Context) error { return setString(d, &c.SessionDigest) }},
		{"query_digest", func(d *decoder, c *abi.Context) error { return setString(d, &c.QueryDigest) }},
		{"now", func(d *decoder, c *abi.Context) error { return setString(d, &c.Now) }},
		{"capabilities", func(d *decoder, c *abi.Context) error { return setSlice(d, &c.Capabilities, setString[string]) }},
		{"confirmation", func(d *decoder, c *abi.Context) error { return setPtr(d, &c.Confirmation, confirmation) }},
		{"principal", func(d *decoder, c *abi.Context) error { return setPtr(d, &c.Principal, principal) }},
	})
	decodeRequest = structOf([]field[abi.Request]{
		{"abi_version", func(d *decoder, r *abi.Request) error { return setInt(d, &r.ABIVersion) }},
		{"abi_minor", func(d *decoder, r *abi.Request) error { return setInt(d, &r.MinorVersion) }},
		{"run_id", func(d *decoder, r *abi.Request) error { return setString(d, &r.RunID) }},
		{"pipeline", func(d *decoder, r *abi.Request) error { return setString(d, &r.Pipeline) }},
		{"stage", func(d *decoder, r *abi.Request) error { return setString(d, &r.Stage) }},
		{"subject_kind", func(d *decoder, r *abi.Request) error { return setString(d, &r.SubjectKind) }},
		{"subject", func(d *decoder, r *abi.Request) error { return setRaw(d, &r.Subject) }},
		{"config", func(d *decoder, r *abi.Request) error { return setRawMemo(d, &r.Config, &configMemo) }},
		{"config_digest", func(d *decoder, r *abi.Request) error { return setString(d, &r.ConfigDigest) }},
		{"context", func(d *decoder, r *abi.Request) error { return context(d, &r.Context) }},
	})
	decodeToolCall = structOf([]field[abi.ToolCall]{
		{"id", func(d *decoder, c *abi.ToolCall) error { return setString(d, &c.ID) }},
		{"tool", func(d *decoder, c *abi.ToolCall) error { return setString(d, &c.Tool) }},
		{"parameters", func(d *decoder, c *abi.ToolCall) error { return setRaw(d, &c.Parameters) }},
		{"parse_error", func(d *decoder, c *abi.ToolCall) error { return setString(d, &c.ParseError) }},
	})
	precondition := structOf([]field[abi.Precondition]{
		{"key", func(d *decoder, p *abi.Precondition) error { return setString(d, &p.Key) }},
		{"operator", func(d *decoder, p *abi.Precondition) error { return setString(d, &p.Operator) }},
		{"value", func(d *decoder, p *abi.Precondition) error { return setAny(d, &p.Value) }},
		{"description", func(d *decoder, p *abi.Precondition) error { return setString(d, &p.Description) }},
	})
	action := structOf([]field[abi.Action]{
		{"id", func(d *decoder, a *abi.Action) error { return setString(d, &a.ID) }},
		{"type", func(d *decoder, a *abi.Action) error { return setString(d, &a.Type) }},
		{"tool", func(d *decoder, a *abi.Action) error { return setString(d, &a.Tool) }},
		{"parameters", func(d *decoder, a *abi.Action) error { return setRaw(d, &a.Parameters) }},
		{"parse_error", func(d *decoder, a *abi.Action) error { return setString(d, &a.ParseError) }},
		{"preconditions", func(d *decoder, a *abi.Action) error { return setSlice(d, &a.Preconditions, precondition) }},
		{"expected_effects", func(d *decoder, a *abi.Action) error { return setMap(d, &a.ExpectedEffects) }},
		{"state_dependencies", func(d *decoder, a *abi.Action) error { return setSlice(d, &a.StateDependencies, setString[string]) }},
		{"depends_on", func(d *decoder, a *abi.Action) error { return setSlice(d, &a.DependsOn, setInt[int]) }},
		{"idempotent", func(d *decoder, a *abi.Action) error { return setPtr(d, &a.Idempotent, setBool) }},
		{"max_retries", func(d *decoder, a *abi.Action) error { return setPtr(d, &a.MaxRetries, setInt[int]) }},
		{"failure_behavior", func(d *decoder, a *abi.Action) error { return setString(d, &a.FailureBehavior) }},
		{"timeout_ms", func(d *decoder, a *abi.Action) error { return setPtr(d, &a.TimeoutMS, setInt[int64]) }},
		{"reversibility", func(d *decoder, a *abi.Action) error { return setString(d, &a.Reversibility) }},
		{"metadata", func(d *decoder, a *abi.Action) error { return setRaw(d, &a.Metadata) }},
	})
	decodeProposal = structOf([]field[abi.Proposal]{
		{"id", func(d *decoder, p *abi.Proposal) error { return setString(d, &p.ID) }},
		{"source", func(d *decoder, p *abi.Proposal) error { return setString(d, &p.Source) }},
		{"actions", func(d *decoder, p *abi.Proposal) error { return setSlice(d, &p.Actions, action) }},
		{"context", func(d *decoder, p *abi.Proposal) error { return setMap(d, &p.Context) }},
	})
}
