package engine

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

func TestMain(m *testing.M) { testwasm.Main(m, nil) }

type nopCalls struct{}

func (nopCalls) Call(context.Context, any, string, []byte) []byte { return nil }
func (nopCalls) Log(context.Context, any, int32, string)          {}

// logBuffer collects an engine's log lines, safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newTestEngine returns an engine closed at the test's end: 64 MiB of
// memory and no cache unless opts says otherwise.
func newTestEngine(t *testing.T, opts Options) *Engine {
	t.Helper()
	opts.MemoryLimitPages = cmp.Or(opts.MemoryLimitPages, 1024)
	opts.Calls = nopCalls{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e, err := New(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func wat(t testing.TB, src string) []byte {
	t.Helper()
	b, err := testwasm.WAT(src)
	require.NoError(t, err)
	return b
}

// evaluate compiles wasm on e, instantiates it and returns its answer to an
// empty request.
func evaluate(t *testing.T, e *Engine, wasm []byte) string {
	t.Helper()
	ctx := context.Background()
	m, err := e.Compile(ctx, wasm)
	require.NoError(t, err)
	defer m.Close(ctx)
	inst, err := m.Instantiate(ctx)
	require.NoError(t, err)
	defer inst.Close(ctx)
	out, err := inst.Evaluate(ctx, nil, []byte(`{}`), 1<<20)
	require.NoError(t, err)
	return string(out)
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Mode().Perm()
}
