package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/gatehost/gatehost/internal/jsonptr"
)

// configSchemaError turns a stage config's failure against its gate's config
// schema into a *ConfigError wrapping ErrStageConfig, in the operator's
// terms: the key path of the first offending value below field, and for a
// key the schema does not allow (additionalProperties false), the keys it
// does accept, read from the schema's properties. doc is the decoded config
// (abischema.Decode), schema the descriptor's config_schema.
func configSchemaError(field string, schema json.RawMessage, doc any, err error) *ConfigError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ConfigError{Field: field, Reason: "rejected by the gate's config schema", Err: fmt.Errorf("%w: %w", ErrStageConfig, err)}
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	path, node := instancePath(doc, ve.InstanceLocation)
	ce := &ConfigError{Field: field + path, Reason: ve.Message, Err: ErrStageConfig}
	_, kw, _ := strings.Cut(ve.AbsoluteKeywordLocation, "#")
	parent, ok := strings.CutSuffix(kw, "/additionalProperties")
	obj, isObj := node.(map[string]any)
	if !ok || !isObj {
		return ce
	}
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return ce
	}
	sub, _ := schemaAt(s, parent).(map[string]any)
	props, _ := sub["properties"].(map[string]any)
	if sub == nil || sub["patternProperties"] != nil {
		return ce
	}
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if _, ok := props[k]; !ok {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return ce
	}
	noun := "key"
	if len(unknown) > 1 {
		noun = "keys"
	}
	accepts := "none"
	if len(props) > 0 {
		accepts = strings.Join(slices.Sorted(maps.Keys(props)), ", ")
	}
	ce.Reason = fmt.Sprintf("unknown %s %s (accepts: %s)", noun, strings.Join(unknown, ", "), accepts)
	return ce
}

// instancePath follows a JSON pointer (RFC 6901) into doc and returns it as a
// key path (".a[0].b") and the value it names.
func instancePath(doc any, pointer string) (string, any) {
	var b strings.Builder
	node := doc
	for _, tok := range splitPointer(pointer) {
		switch n := node.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return b.String(), nil
			}
			fmt.Fprintf(&b, "[%d]", i)
			node = n[i]
		case map[string]any:
			b.WriteString("." + tok)
			node = n[tok]
		default:
			return b.String(), nil
		}
	}
	return b.String(), node
}

// schemaAt follows a JSON pointer into a decoded schema document.
func schemaAt(doc any, pointer string) any {
	node := doc
	for _, tok := range splitPointer(pointer) {
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	return node
}

// splitPointer splits a JSON pointer into its unescaped reference tokens.
func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil { // the validator path-escapes tokens
			t = u
		}
		toks[i], _ = jsonptr.Unescape(t) // a stray "~" is kept as is
	}
	return toks
}
