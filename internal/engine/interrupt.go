package engine

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/gatehost/gatehost/internal/engine/rewrite"
	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// Rewritten modules are cached by the sha256 of the original bytes and
// rewrite.Version: in memory, so a reload or a second engine (Inspect, a
// new host) does not rewrite the same module again, and in the cache
// directory (authenticated like its compiled entries; cache.go), so a
// one-shot command does not either. The runtime's compilation cache is
// keyed by the digest of the bytes it compiles, the rewritten ones, so a
// new rewriter version can never load code compiled from an older rewrite.
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

// rewritten returns wasm rewritten for interruption (rewrite.Module):
// from memory when the same bytes were rewritten before in this process,
// else from the engine's cache directory when it holds an authenticated
// copy, else afresh (and then stored there). The result is shared: callers
// must not modify it.
func (e *Engine) rewritten(wasm []byte) ([]byte, error) {
	k := rewriteKey{sha256.Sum256(wasm), rewrite.Version}
	c := &rewriteCache
	c.Lock()
	out, ok := c.m[k]
	c.Unlock()
	if ok {
		return out, nil
	}
	name := fmt.Sprintf("%x-v%d", k.sum, k.version)
	if e != nil && e.cache != nil {
		out = e.cache.loadRewritten(name, 2*e.opts.Limits.ModuleBytes)
	}
	if out == nil {
		var err error
		if out, err = rewrite.Module(wasm, rewrite.Options{}); err != nil {
			return nil, err
		}
		TestRewrites.Add(1)
		if e != nil && e.cache != nil {
			e.cache.storeRewritten(name, out)
		}
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

// TestRewrites counts the modules rewritten afresh (not found in memory
// or on disk), for tests.
var TestRewrites atomic.Int64

// forgetRewrites empties the in-memory cache of rewritten modules (tests).
func forgetRewrites() {
	c := &rewriteCache
	c.Lock()
	defer c.Unlock()
	c.m, c.order, c.bytes = map[rewriteKey][]byte{}, nil, 0
}

// errRewrite marks a refusal of the interrupt rewrite (package rewrite):
// the module cannot be run, since it could not be stopped.
var errRewrite = errors.New("interrupt rewrite")

func rewriteRefused(err error) *LoadError {
	return &LoadError{Kind: ErrCompile, Err: fmt.Errorf("%w: %w", errRewrite, err)}
}

// interrupter stops one instance's guest code when a call's context is
// done, by setting the instance's interrupt word and zeroing its countdown
// (rewrite.CountdownExport): the rewritten code traps at its next
// function entry, return from a call, loop header or bulk-memory chunk.
// The zero value (no globals) does nothing: the runtime's own check, if
// any, applies.
type interrupter struct {
	word, countdown rt.MutableGlobal
	fired           chan struct{} // one token per firing, so a call can wait for it
}

func newInterrupter(mod rt.Module) (interrupter, bool) {
	w, ok := mod.ExportedGlobal(rewrite.InterruptExport).(rt.MutableGlobal)
	if !ok {
		return interrupter{}, false
	}
	c, ok := mod.ExportedGlobal(rewrite.CountdownExport).(rt.MutableGlobal)
	if !ok {
		return interrupter{}, false
	}
	return interrupter{word: w, countdown: c, fired: make(chan struct{}, 1)}, true
}

// call runs fn under ctx. If ctx ends during the call the word is set and
// the guest traps; the word is cleared again before call returns, so an
// instance whose call finished just as its context ended is not left
// primed to trap on its next call. (A countdown left at 0 costs that call
// one early safepoint.)
func (it interrupter) call(ctx context.Context, fn rt.Function, params ...uint64) ([]uint64, error) {
	if it.word == nil {
		return fn.Call(ctx, params...)
	}
	if ctx.Err() != nil { // already over: do not start the guest at all
		return nil, context.Cause(ctx)
	}
	stop := context.AfterFunc(ctx, func() {
		// The word first: the guest tests it when the countdown runs out.
		it.word.Set(1)
		it.countdown.Set(0)
		it.fired <- struct{}{}
	})
	res, err := fn.Call(ctx, params...)
	if !stop() {
		<-it.fired // the firing has set the word: wait, then clear it
		it.word.Set(0)
	}
	return res, err
}

// rewriteTag is the authentication tag of the rewritten module named name.
func (c *authCache) rewriteTag(name string, module []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(rewriteContext))
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(module)
	return h.Sum(nil)
}

// loadRewritten returns the stored rewrite named name, or nil when there
// is none. A stored rewrite that does not authenticate is removed and
// logged: the module is rewritten afresh.
func (c *authCache) loadRewritten(name string, maxBytes int) []byte {
	path := filepath.Join(c.dir, rewriteDir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	reason := ""
	var b []byte
	switch {
	case !fi.Mode().IsRegular():
		reason = "not a regular file"
	case fi.Size() < sha256.Size || fi.Size() > int64(maxBytes)+sha256.Size:
		reason = fmt.Sprintf("size %d out of range", fi.Size())
	default:
		if b, err = os.ReadFile(path); err != nil || len(b) < sha256.Size {
			reason = fmt.Sprintf("unreadable: %v", err)
		} else if !hmac.Equal(b[:sha256.Size], c.rewriteTag(name, b[sha256.Size:])) {
			reason = "authentication tag does not match (entry modified or damaged)"
		}
	}
	if reason != "" {
		c.log.Warn("engine: stored rewritten module discarded; the module is rewritten afresh", "path", path, "reason", reason)
		_ = os.Remove(path)
		return nil
	}
	return b[sha256.Size:]
}

// storeRewritten saves module under name, tag first. A failure costs only
// a later rewrite, so it is logged, not returned.
func (c *authCache) storeRewritten(name string, module []byte) {
	b := append(c.rewriteTag(name, module), module...)
	if err := writeAtomic(filepath.Join(c.dir, rewriteDir, name), b); err != nil {
		c.log.Warn("engine: rewritten module not stored", "name", name, "err", err)
	}
}
