package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// doneCtx is a context the test ends by hand, with the error it chooses:
// a deadline without a clock.
type doneCtx struct {
	context.Context
	done chan struct{}
	err  error
}

func newDoneCtx(err error) *doneCtx {
	return &doneCtx{Context: context.Background(), done: make(chan struct{}), err: err}
}

func (c *doneCtx) Done() <-chan struct{} { return c.done }
func (c *doneCtx) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// holdCompiles makes every compile wait, once started, until release is
// closed; started receives one value per compile.
func holdCompiles(t *testing.T) (started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 16), make(chan struct{})
	TestHookCompile = func() {
		started <- struct{}{}
		<-release
	}
	t.Cleanup(func() { TestHookCompile = nil })
	return started, release
}

// TestCompileAbandonedAtContextEnd: a compile still running when its
// context ends returns at once with a typed error; the engine closes
// without waiting for it, and releases the runtime when it ends.
func TestCompileAbandonedAtContextEnd(t *testing.T) {
	wasm := wat(t, pinnedWAT)
	for _, c := range []struct {
		name   string
		ctxErr error
		kind   error
	}{
		{"deadline", context.DeadlineExceeded, ErrCompileTimeout},
		{"cancel", context.Canceled, ErrCompile},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEngine(t, Options{CacheDir: t.TempDir()})
			started, release := holdCompiles(t)
			ctx := newDoneCtx(c.ctxErr)
			errc := make(chan error, 1)
			go func() {
				_, err := e.Compile(ctx, wasm)
				errc <- err
			}()
			<-started
			close(ctx.done)
			err := <-errc // returns while the compile is held
			require.Error(t, err)
			assert.ErrorIs(t, err, c.kind)
			assert.ErrorIs(t, err, c.ctxErr)
			var le *LoadError
			require.ErrorAs(t, err, &le)

			require.NoError(t, e.Close(context.Background()), "Close does not wait for the compile")
			select {
			case <-e.released:
				t.Fatal("runtime released under a running compile")
			default:
			}
			_, err = e.Compile(context.Background(), wasm)
			assert.ErrorIs(t, err, ErrClosed)
			close(release)
			<-e.released // released once the compile ends
		})
	}
}

// TestCompileContextAlreadyDone: no compile starts under a done context.
func TestCompileContextAlreadyDone(t *testing.T) {
	e := newTestEngine(t, Options{})
	started, _ := holdCompiles(t)
	for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
		ctx := newDoneCtx(ctxErr)
		close(ctx.done)
		_, err := e.Compile(ctx, wat(t, pinnedWAT))
		require.Error(t, err)
		assert.ErrorIs(t, err, ctxErr)
	}
	assert.Empty(t, started, "nothing was compiled")
}

// TestCompileFinishesFirst: a compile that ends before its context returns
// its module.
func TestCompileFinishesFirst(t *testing.T) {
	e := newTestEngine(t, Options{})
	m, err := e.Compile(context.Background(), wat(t, pinnedWAT))
	require.NoError(t, err)
	require.NoError(t, m.Close(context.Background()))
	// Well-shaped, but i32.add on an empty stack: the runtime refuses it.
	_, err = e.Compile(context.Background(), genModuleRaw([]byte{0, 0x6a, 0x0b}))
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.True(t, errors.Is(err, ErrCompile))
	assert.False(t, errors.Is(err, ErrMalformed), "the runtime's refusal, not the shape check's")
}

// TestCompileWaitsForTheSameModule: a second compile of the same bytes into
// the same cache waits for the first and finds its entry; canceled while
// waiting, it returns at once.
func TestCompileWaitsForTheSameModule(t *testing.T) {
	dir := t.TempDir()
	wasm := wat(t, pinnedWAT)
	a := newTestEngine(t, Options{CacheDir: dir})
	b := newTestEngine(t, Options{CacheDir: dir, MemoryLimitPages: 2048})
	started, release := holdCompiles(t)
	first := make(chan error, 1)
	go func() {
		_, err := a.Compile(context.Background(), wasm)
		first <- err
	}()
	<-started

	// b waits for a's compile, held; its context ends meanwhile.
	waiting := newDoneCtx(context.Canceled)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Compile(waiting, wasm)
		errc <- err
	}()
	close(waiting.done)
	err := <-errc
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)

	close(release)
	require.NoError(t, <-first)
	TestHookCompile = nil
	seen := b.cache.prepare(compiledSum(t, wasm))
	assert.Len(t, seen.names, 1, "the second engine finds the first one's entry")
	m, err := b.Compile(context.Background(), wasm)
	require.NoError(t, err)
	require.NoError(t, m.Close(context.Background()))
}
