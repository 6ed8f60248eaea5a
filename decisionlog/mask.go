package decisionlog

import "github.com/gatehost/gatehost/decisionlog/mask"

// Masked is the value that replaces a masked one in an exported event.
const Masked = mask.Masked

// ErrInvalidPointer is wrapped by ParsePointer's errors.
var ErrInvalidPointer = mask.ErrInvalidPointer

// Pointer is a parsed RFC 6901 JSON Pointer into an exported event
// (mask.Pointer).
type Pointer struct{ mask.Pointer }

// ParsePointer parses a pointer to mask (mask.ParsePointer). Errors wrap
// ErrInvalidPointer.
func ParsePointer(s string) (Pointer, error) {
	p, err := mask.ParsePointer(s)
	return Pointer{p}, err
}

// apply masks the value p points to in doc (mask.Pointer.Apply).
func (p Pointer) apply(doc any) bool { return p.Apply(doc) }
