// Package mask is the masking of exported decision-log events: RFC 6901
// JSON Pointers into an event, parsed and checked (ParsePointer), and the
// replacement of the value one points to (Pointer.Apply). It imports no
// exporter, so that a config decoder can check decision_log.mask without
// linking them.
package mask

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/gatehost/gatehost/internal/jsonptr"
)

// Masked is the value that replaces a masked one in an exported event.
const Masked = "[masked]"

// ErrInvalidPointer is wrapped by ParsePointer's errors.
var ErrInvalidPointer = errors.New("decisionlog: invalid JSON pointer")

// protected are the event members that identify the record on its chain
// (and the list of masked paths): masking them would make the copy
// uncheckable, so a pointer into them is refused.
var protected = []string{"seq", "hash", "prev", "chain", "erased"}

// Pointer is a parsed RFC 6901 JSON Pointer into an exported event.
type Pointer struct {
	text   string
	tokens []string
}

// String returns the pointer as written.
func (p Pointer) String() string { return p.text }

// ParsePointer parses an RFC 6901 JSON Pointer such as
// "/result/findings/0/evidence": "/"-separated reference tokens in which
// "~1" stands for "/" and "~0" for "~". The whole document ("") and the
// members seq, hash, prev, chain and erased are refused: they are what
// makes an exported record checkable against the local log. Errors wrap
// ErrInvalidPointer.
func ParsePointer(s string) (Pointer, error) {
	if s == "" || s[0] != '/' {
		return Pointer{}, fmt.Errorf("%w: %q: must start with \"/\" (the whole event cannot be masked)", ErrInvalidPointer, s)
	}
	tokens, err := jsonptr.Split(s)
	if err != nil {
		return Pointer{}, fmt.Errorf("%w: %q: \"~\" must be followed by 0 or 1", ErrInvalidPointer, s)
	}
	for _, p := range protected {
		if tokens[0] == p {
			return Pointer{}, fmt.Errorf("%w: %q: /%s identifies the exported record and cannot be masked", ErrInvalidPointer, s, p)
		}
	}
	return Pointer{text: s, tokens: tokens}, nil
}

// Apply replaces the value p points to in doc (a decoded JSON value of
// maps, slices and scalars) with Masked, and reports whether it did: a
// pointer that resolves to nothing (a missing member, an index past the
// end, "-", an index with a leading zero) masks nothing.
func (p Pointer) Apply(doc any) bool {
	cur := doc
	for i, tok := range p.tokens {
		last := i == len(p.tokens)-1
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return false
			}
			if last {
				v[tok] = Masked
				return true
			}
			cur = next
		case []any:
			n, ok := arrayIndex(tok)
			if !ok || n >= len(v) {
				return false
			}
			if last {
				v[n] = Masked
				return true
			}
			cur = v[n]
		default:
			return false
		}
	}
	return false
}

// arrayIndex parses an RFC 6901 array index: "0", or digits without a
// leading zero.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}
