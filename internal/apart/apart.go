// Package apart runs work that its caller must be able to stop waiting
// for: code the host does not control (an embedder's policy, a check's
// process) or whose cost grows with untrusted input (a large answer or
// host-call request). A stage ends when its guest returns, so such work
// may hold the stage only until the stage's context ends.
package apart

import (
	"context"
	"errors"
	"fmt"
)

// ErrAbandoned is returned, wrapping the context's cause, when the
// context ended before the work did.
var ErrAbandoned = errors.New("abandoned at the context's end")

// PanicError is a panic of the work, recovered on its goroutine (where
// nothing else would recover it and the process would end).
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Run runs fn on a goroutine of its own and returns its result, or, as
// soon as ctx is done, a zero T and an error wrapping ErrAbandoned and
// context.Cause(ctx), whichever comes first (a result already there when
// ctx is seen done is returned). Abandoned work runs on to its
// end and its result is dropped; nothing waits for it. A panic in fn is
// returned as a *PanicError. A ctx already done when Run is called still
// starts fn: the caller decides whether to call at all.
func Run[T any](ctx context.Context, fn func() T) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: abandoned work still ends
	go func() {
		var r result
		defer func() {
			if v := recover(); v != nil {
				r = result{err: &PanicError{Value: v}}
			}
			done <- r
		}()
		r.v = fn()
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // ended together: the result is there to take
			return r.v, r.err
		default:
		}
		var zero T
		return zero, fmt.Errorf("%w: %w", ErrAbandoned, context.Cause(ctx))
	}
}
