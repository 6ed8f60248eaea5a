package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/gatehost/gatehost/internal/engine/rewrite"
	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// Rewritten modules are cached in memory by the sha256 of the original
// bytes and rewrite.Version, so a reload or a second engine (Inspect, a
// new host) does not rewrite the same module again. On disk, the
// runtime's compilation cache is keyed by the digest of the bytes it
// compiles, the rewritten ones, so a new rewriter version can never load
// code compiled from an older rewrite.
const (
	rewriteCacheEntries = 16
	rewriteCacheBytes   = 256 << 20
)

type rewriteKey struct {
	sum     [sha256.Size]byte
	version int
}

var rewriteCache = struct {
	sync.Mutex
	m     map[rewriteKey][]byte
	order []rewriteKey // oldest first
	bytes int
}{m: map[rewriteKey][]byte{}}

// rewritten returns wasm rewritten for interruption (rewrite.Module),
// from the cache when the same bytes were rewritten before. The result
// is shared: callers must not modify it.
func rewritten(wasm []byte) ([]byte, error) {
	k := rewriteKey{sha256.Sum256(wasm), rewrite.Version}
	c := &rewriteCache
	c.Lock()
	out, ok := c.m[k]
	c.Unlock()
	if ok {
		return out, nil
	}
	out, err := rewrite.Module(wasm, rewrite.Options{})
	if err != nil {
		return nil, err
	}
	if len(out) > rewriteCacheBytes {
		return out, nil
	}
	c.Lock()
	defer c.Unlock()
	if _, ok := c.m[k]; !ok {
		for len(c.order) > 0 && (len(c.order) >= rewriteCacheEntries || c.bytes+len(out) > rewriteCacheBytes) {
			old := c.order[0]
			c.order = c.order[1:]
			c.bytes -= len(c.m[old])
			delete(c.m, old)
		}
		c.m[k] = out
		c.order = append(c.order, k)
		c.bytes += len(out)
	}
	return out, nil
}

// errRewrite marks a refusal of the interrupt rewrite (package rewrite):
// the module cannot be run, since it could not be stopped.
var errRewrite = errors.New("interrupt rewrite")

func rewriteRefused(err error) *LoadError {
	return &LoadError{Kind: ErrCompile, Err: fmt.Errorf("%w: %w", errRewrite, err)}
}

// interrupter stops one instance's guest code when a call's context is
// done, by setting the instance's interrupt global: the rewritten code
// traps at its next function entry, loop header or bulk-memory chunk.
// The zero value (no global) does nothing: the runtime's own check, if
// any, applies.
type interrupter struct {
	word  rt.MutableGlobal
	fired chan struct{} // one token per firing, so a call can wait for it
}

func newInterrupter(mod rt.Module) (interrupter, bool) {
	g, ok := mod.ExportedGlobal(rewrite.InterruptExport).(rt.MutableGlobal)
	if !ok {
		return interrupter{}, false
	}
	return interrupter{word: g, fired: make(chan struct{}, 1)}, true
}

// call runs fn under ctx. If ctx ends during the call the word is set and
// the guest traps; the word is cleared again before call returns, so an
// instance whose call finished just as its context ended is not left
// primed to trap on its next call.
func (it interrupter) call(ctx context.Context, fn rt.Function, params ...uint64) ([]uint64, error) {
	if it.word == nil {
		return fn.Call(ctx, params...)
	}
	if ctx.Err() != nil { // already over: do not start the guest at all
		return nil, context.Cause(ctx)
	}
	stop := context.AfterFunc(ctx, func() {
		it.word.Set(1)
		it.fired <- struct{}{}
	})
	res, err := fn.Call(ctx, params...)
	if !stop() {
		<-it.fired // the firing has set the word: wait, then clear it
		it.word.Set(0)
	}
	return res, err
}
