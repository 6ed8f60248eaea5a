package page_test

import (
	"log/slog"
	"sync"
	"testing"
)

// tlog writes log lines to the test's log until the test ends.
type tlog struct {
	t    testing.TB
	mu   *sync.Mutex
	done *bool
}

func (w tlog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !*w.done {
		w.t.Log(string(p))
	}
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	w := tlog{t: t, mu: &sync.Mutex{}, done: new(bool)}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		*w.done = true
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
