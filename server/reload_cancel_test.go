package server

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/engine"
)

// TestServeStopsDuringReloadCompile: a SIGTERM (the run context's end)
// while a reload is compiling stops the server, although the compile
// itself cannot be interrupted: here it is held until the test ends, so
// only an abandoned compile lets the server stop at all. The old config
// served until then.
func TestServeStopsDuringReloadCompile(t *testing.T) {
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, variantParams(false))
	ts := startServe(t, cfg, nil)

	started, release := make(chan struct{}, 64), make(chan struct{})
	engine.TestHookCompile = func() {
		started <- struct{}{}
		<-release
	}
	t.Cleanup(func() {
		close(release)
		engine.TestHookCompile = nil
	})
	writeServeConfig(t, dir, variantParams(true))
	ts.hup <- syscall.SIGHUP
	<-started // the reload is compiling, and stays so

	require.NoError(t, ts.stop(t), "the server stops while the reload's compile runs")
	logs := ts.logs.String()
	assert.Contains(t, logs, "reload failed; the previous config keeps serving")
	assert.Contains(t, logs, "stopped; event log closed")
}
