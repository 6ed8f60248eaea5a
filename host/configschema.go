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

	"github.com/gatehost/gatehost/internal/jsonptr"
	"github.com/gatehost/gatehost/internal/schemafind"
)

// configSchemaError turns a stage config's failure against its gate's config
// schema into a *ConfigError wrapping ErrStageConfig, in the operator's
// terms: the key path of the first offending value below field (the first
// violation, in schemafind.Violations' order), and for a key the schema
// does not allow (additionalProperties false), the keys it does accept,
// read from the schema's properties. doc is the decoded config
// (abischema.Decode), schema the descriptor's config_schema.
func configSchemaError(field string, schema json.RawMessage, doc any, err error) *ConfigError {
	var ve *schemafind.ValidationError
	if !errors.As(err, &ve) {
		return &ConfigError{Field: field, Reason: "rejected by the gate's config schema", Err: fmt.Errorf("%w: %w", ErrStageConfig, err)}
	}
	v := ve.Violations[0]
	path, node := instancePath(doc, v.Instance)
	ce := &ConfigError{Field: field + path, Reason: v.Message, Err: ErrStageConfig}
	obj, isObj := node.(map[string]any)
	if v.Keyword != "additionalProperties" || !isObj {
		return ce
	}
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return ce
	}
	// The violation's schema is the one holding additionalProperties.
	_, parent, _ := strings.Cut(v.SchemaURL, "#")
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

// instancePath follows reference tokens into doc and returns them as a key
// path (".a[0].b") and the value they name.
func instancePath(doc any, toks []string) (string, any) {
	var b strings.Builder
	node := doc
	for _, tok := range toks {
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

// schemaAt follows a URL fragment holding a JSON pointer into a decoded
// schema document.
func schemaAt(doc any, fragment string) any {
	return schemafind.Lookup(doc, splitPointer(fragment))
}

// splitPointer splits a URL fragment holding a JSON pointer (a schema
// location's) into its unescaped reference tokens.
func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil { // a fragment is URL-escaped (RFC 6901 §6)
			t = u
		}
		toks[i], _ = jsonptr.Unescape(t) // a stray "~" is kept as is
	}
	return toks
}
