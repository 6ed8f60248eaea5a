package schemafind

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/jsonptr"
)

// validate checks v against s and returns the leaf violations sorted by
// pointer, keyword and message, without duplicates. An error (ErrValidator)
// means the validator itself failed (an infinite $ref loop, say), not that
// the value is invalid.
func validate(s *jsonschema.Schema, v any) (out []abi.SchemaFinding, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v", ErrValidator, r)
		}
	}()
	err = s.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("%w: %w", ErrValidator, err)
	}
	collect(ve, &out)
	slices.SortFunc(out, func(a, b abi.SchemaFinding) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		if c := strings.Compare(a.Keyword, b.Keyword); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out), nil
}

// collect appends the leaves of ve. The alternatives of anyOf and oneOf,
// and the per-item misses under minContains, are reported as one violation
// of the combinator: each branch's own errors are not each something the
// caller must fix.
func collect(ve *jsonschema.ValidationError, out *[]abi.SchemaFinding) {
	kw := keywordOf(ve.KeywordLocation)
	switch {
	case len(ve.Causes) == 0, kw == "anyOf", kw == "oneOf", kw == "minContains":
		*out = append(*out, abi.SchemaFinding{
			Pointer: instancePointer(ve.InstanceLocation),
			Keyword: kw,
			Message: leafMessage(kw, ve.Message),
		})
		return
	}
	for _, c := range ve.Causes {
		collect(c, out)
	}
}

// Schema keywords whose next location segment is a user-chosen name or an
// array index rather than a keyword.
var (
	namedChildren = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true, "dependentRequired": true, "dependencies": true,
	}
	indexedChildren = map[string]bool{
		"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true,
	}
)

// keywordOf returns the keyword a keyword location ends in. It walks the
// location from the root because a property may be named like a keyword:
// in /properties/type/enum, "type" is a name and "enum" the keyword. When
// the location ends on a subschema (a false schema failed) the keyword is
// the applicator that holds it, such as "properties" or "items".
func keywordOf(loc string) string {
	segs := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	kw := ""
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if s == "" {
			continue
		}
		kw = s
		switch {
		case namedChildren[s]:
			i++ // skip the name
			if (s == "dependentRequired" || s == "dependencies") && i+1 < len(segs) && isIndex(segs[i+1]) {
				i++ // and the index into the list of required names
			}
		case indexedChildren[s], s == "items" && i+1 < len(segs) && isIndex(segs[i+1]):
			i++ // skip the index
		}
	}
	return kw
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// instancePointer turns the validator's instance location, whose tokens are
// JSON-Pointer-escaped and then URL-path-escaped, into a plain RFC 6901
// pointer.
func instancePointer(loc string) string {
	if loc == "" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(loc, "/"), "/") {
		if u, err := url.PathUnescape(tok); err == nil {
			tok = u
		}
		b.WriteByte('/')
		b.WriteString(escapePointerToken(unescapePointerToken(tok)))
	}
	return b.String()
}

// escapePointerToken escapes one reference token (RFC 6901 §3).
func escapePointerToken(s string) string { return jsonptr.Escape(s) }

// unescapePointerToken is the inverse (RFC 6901 §4). The validator's
// tokens are its own; a stray "~" in one is kept as is.
func unescapePointerToken(s string) string {
	u, _ := jsonptr.Unescape(s)
	return u
}

// leafMessage rewrites the validator's message where it would echo the
// offending input value (findings never echo tool input) or where its
// wording depends on map order.
func leafMessage(kw, msg string) string {
	switch kw {
	case "format":
		// "<value> is not valid 'email'"
		if i := strings.LastIndex(msg, " is not valid "); i >= 0 {
			return "value is not a valid " + msg[i+len(" is not valid "):]
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		// "must be >= 1 but found 0"
		if i := strings.Index(msg, " but found "); i >= 0 {
			return "value " + msg[:i]
		}
	case "multipleOf":
		// "<value> not multipleOf 2"
		if i := strings.Index(msg, " not multipleOf "); i >= 0 {
			return "value is not a multiple of " + msg[i+len(" not multipleOf "):]
		}
	case "additionalProperties":
		// "additionalProperties 'b', 'a' not allowed": the names come from
		// map iteration, so sort them for a stable message.
		const pre, post = "additionalProperties ", " not allowed"
		if strings.HasPrefix(msg, pre) && strings.HasSuffix(msg, post) {
			names := strings.Split(msg[len(pre):len(msg)-len(post)], ", ")
			slices.Sort(names)
			return "properties not allowed: " + strings.Join(names, ", ")
		}
	case "anyOf":
		return "value matches none of the anyOf alternatives"
	case "oneOf":
		if msg == "oneOf failed" {
			return "value matches none of the oneOf alternatives"
		}
	case "minContains":
		// "valid must be >= 1, but got 0": counts, not values.
		return "too few items match the contains schema: " + msg
	case "const", "enum":
		return msg
	}
	if msg == "not allowed" {
		return "value not allowed here (false schema under " + kw + ")"
	}
	return msg
}
