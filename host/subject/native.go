package subject

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/schemafind"
)

// The members encoding/json reads into each abi struct, from their tags, so
// that an added ABI field is covered by the case-folding check unchanged.
var (
	proposalKeys     = jsonKeys(reflect.TypeFor[abi.Proposal]())
	actionKeys       = jsonKeys(reflect.TypeFor[abi.Action]())
	preconditionKeys = jsonKeys(reflect.TypeFor[abi.Precondition]())
)

func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
		case "":
			keys = append(keys, f.Name)
		default:
			keys = append(keys, name)
		}
	}
	return keys
}

// parseNative validates data against the proposal schema and decodes it.
// Numbers in free-form values (context, effects, precondition values) stay
// json.Number so that re-encoding keeps them exact.
func parseNative(data []byte, in *input, l loc) (abi.Proposal, error) {
	if in.obj == nil {
		return abi.Proposal{}, l.errorf(nil, "a native proposal must be an object, got array")
	}
	if n := countElems(in.obj["actions"], MaxActions); n > MaxActions {
		return abi.Proposal{}, l.at("actions").errorf(ErrTooLarge, "more than %d actions", MaxActions)
	}
	var doc any
	if err := decodeNumbers(data, &doc); err != nil {
		return abi.Proposal{}, l.errorf(err, "invalid JSON: %s", jsonErrText(err))
	}
	if err := abischema.CheckNumbers(doc); err != nil {
		return abi.Proposal{}, l.errorf(err, "%v", err)
	}
	// The one compiled copy of the proposal schema, the host's.
	if err := abischema.ValidateValue(abi.SchemaProposal, doc); err != nil {
		return abi.Proposal{}, schemaError(err, l)
	}
	if err := checkNativeFold(doc, l); err != nil {
		return abi.Proposal{}, err
	}
	var p abi.Proposal
	if err := decodeNumbers(data, &p); err != nil {
		return abi.Proposal{}, decodeError(data, err, l)
	}
	if p.Actions == nil {
		p.Actions = []abi.Action{}
	}
	return p, nil
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// schemaError reports the first violation of a validation failure, in
// schemafind.Violations' order.
func schemaError(err error, l loc) error {
	var ve *schemafind.ValidationError
	if !errors.As(err, &ve) {
		return l.errorf(nil, "schema validation: %v", err)
	}
	v := ve.Violations[0]
	l.ptr = v.Pointer
	// /actions/N/... is about action N.
	if len(v.Instance) >= 2 && v.Instance[0] == "actions" {
		if i, err := strconv.Atoi(v.Instance[1]); err == nil {
			l.index = i
		}
	}
	return l.errorf(nil, "%s", v.Message)
}

// checkNativeFold applies checkFold to every object encoding/json decodes
// into a struct. doc has passed the schema, so its shape is known, but the
// assertions are checked all the same.
func checkNativeFold(doc any, l loc) error {
	top, _ := doc.(map[string]any)
	if err := checkFold(top, l, proposalKeys); err != nil {
		return err
	}
	actions, _ := top["actions"].([]any)
	for i, a := range actions {
		al := l.at("actions").call(i)
		action, _ := a.(map[string]any)
		if err := checkFold(action, al, actionKeys); err != nil {
			return err
		}
		pre, _ := action["preconditions"].([]any)
		for j, c := range pre {
			c, _ := c.(map[string]any)
			if err := checkFold(c, al.at("preconditions").elem(j), preconditionKeys); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeError explains a decoding failure of a schema-valid proposal: a
// number the schema calls an integer that does not fit its Go field, such
// as 1.0 or 1e30 in depends_on. It finds the action by decoding them one by
// one, which is only worth it on this path.
func decodeError(data []byte, err error, l loc) error {
	var top struct {
		Actions []json.RawMessage `json:"actions"`
	}
	if json.Unmarshal(data, &top) == nil {
		for i, raw := range top.Actions {
			var a abi.Action
			aerr := decodeNumbers(raw, &a)
			if aerr == nil {
				continue
			}
			al := l.at("actions").call(i)
			var te *json.UnmarshalTypeError
			if errors.As(aerr, &te) {
				for part := range strings.SplitSeq(te.Field, ".") {
					if part != "" {
						al = al.at(part)
					}
				}
				return al.errorf(aerr, "%s does not fit a Go %s", te.Value, te.Type)
			}
			return al.errorf(aerr, "%s", jsonErrText(aerr))
		}
	}
	return l.errorf(err, "%s", jsonErrText(err))
}
