package subject

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/internal/runecut"
)

// object is a JSON object whose member values are still raw.
type object map[string]json.RawMessage

func (o object) has(key string) bool {
	_, ok := o[key]
	return ok
}

// asObject decodes raw as an object whose members this package reads by the
// names in known. It refuses a member whose name equals a known one only
// under case folding (see the package doc).
func asObject(raw json.RawMessage, l loc, what string, known ...string) (object, error) {
	if kindOf(raw) != '{' {
		return nil, l.errorf(nil, "%s must be an object, got %s", what, kindName(raw))
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, l.errorf(err, "invalid JSON: %s", jsonErrText(err))
	}
	if err := checkFold(o, l, known); err != nil {
		return nil, err
	}
	return o, nil
}

// checkFold refuses a key of o that strings.EqualFold (the matching
// encoding/json uses for struct fields) equates with a known key it differs
// from.
func checkFold[V any](o map[string]V, l loc, known []string) error {
	var bad, match string
	for k := range o {
		for _, want := range known {
			// The least offending key, so that the error does not depend on
			// map order.
			if k != want && strings.EqualFold(k, want) && (bad == "" || k < bad) {
				bad, match = k, want
			}
		}
	}
	if bad != "" {
		return l.at(bad).errorf(nil, "member %s differs from %q only in case", quote(bad), match)
	}
	return nil
}

// str reads an optional string member: ok is false when it is absent or null.
func (o object) str(l loc, key string) (s string, ok bool, err error) {
	raw, present := o[key]
	switch {
	case !present || kindOf(raw) == 'n':
		return "", false, nil
	case kindOf(raw) != '"':
		return "", false, l.at(key).errorf(nil, "%s must be a string, got %s", key, kindName(raw))
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, l.at(key).errorf(err, "invalid string: %s", jsonErrText(err))
	}
	return s, true, nil
}

// name reads a required, non-empty string member such as a tool name.
func (o object) name(l loc, key string) (string, error) {
	s, ok, err := o.str(l, key)
	if err != nil {
		return "", err
	}
	if !ok || s == "" {
		return "", l.at(key).errorf(nil, "%s is required", key)
	}
	return s, nil
}

// kindOf is the first byte of a JSON value: '{', '[', '"', 'n', 't', 'f',
// '-' or a digit; 0 for an empty or absent value.
func kindOf(raw []byte) byte {
	raw = trimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// kindName names the JSON type of raw for error messages.
func kindName(raw []byte) string {
	switch kindOf(raw) {
	case 0:
		return "nothing"
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	}
	return "number"
}

// decodeList decodes a JSON array of at most MaxActions elements, counting
// them before anything is allocated for them.
func decodeList(raw json.RawMessage, l loc, what string) ([]json.RawMessage, error) {
	if kindOf(raw) != '[' {
		return nil, l.errorf(nil, "%s must be an array, got %s", what, kindName(raw))
	}
	// An invalid array is reported as such, whatever its length.
	if countElems(raw, MaxActions) > MaxActions && json.Valid(raw) {
		return nil, l.errorf(ErrTooLarge, "%s has more than %d elements", what, MaxActions)
	}
	list := []json.RawMessage{}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, l.errorf(err, "invalid JSON: %s", jsonErrText(err))
	}
	return list, nil
}

// objects decodes the elements of list that are objects; the others are nil.
func objects(list []json.RawMessage) []object {
	objs := make([]object, len(list))
	for i, raw := range list {
		if kindOf(raw) == '{' {
			// Cannot fail: list came from decoding valid JSON.
			_ = json.Unmarshal(raw, &objs[i])
		}
	}
	return objs
}

// countElems counts the elements of the JSON array raw, stopping once it
// passes limit. It trusts raw to be valid JSON (an invalid one gets some
// count) and allocates nothing.
func countElems(raw []byte, limit int) int {
	raw = trimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' {
		return 0
	}
	n, depth, inString, escaped, empty := 1, 0, false, false, true
	for _, c := range raw[1 : len(raw)-1] {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		empty = false
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				if n++; n > limit {
					return n
				}
			}
		}
	}
	if empty {
		return 0
	}
	return n
}

// quote quotes a string from the input for an error message, cut short so
// that a huge value cannot make a huge error.
func quote(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	p, _ := runecut.Prefix(s, max, nil)
	return strconv.Quote(p) + "..."
}
