package host_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/engine"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// nestedModule is a module whose one function nests depth op instructions
// (0x02 block, 0x03 loop) and declares locals i32 locals, with ifs ifs
// in sequence after the nest.
func nestedModule(op byte, depth, locals, ifs int) []byte {
	leb := func(v int) []byte {
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	sec := func(id byte, p []byte) []byte { return append(append([]byte{id}, leb(len(p))...), p...) }
	body := []byte{0}
	if locals > 0 {
		body = append(append([]byte{1}, leb(locals)...), 0x7f)
	}
	body = append(body, bytes.Repeat([]byte{op, 0x40}, depth)...)
	body = append(body, bytes.Repeat([]byte{0x0b}, depth)...)
	body = append(body, bytes.Repeat([]byte{0x20, 0x00, 0x04, 0x40, 0x41, 0x01, 0x21, 0x00, 0x0b}, ifs)...)
	body = append(body, 0x0b)
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(1, []byte{1, 0x60, 0, 0})...)
	m = append(m, sec(3, []byte{1, 0})...)
	return append(m, sec(10, append(append([]byte{1}, leb(len(body))...), body...))...)
}

func modulePipeline(wasm []byte) host.Config {
	return host.Config{
		CacheDir:  host.CacheOff,
		Plugins:   map[string]host.PluginConfig{"bomb": {Module: wasm}},
		Pipelines: hosttest.OnePipeline("bomb"),
	}
}

// TestCompileBombsRefused: modules whose compile time grows superlinearly
// with their shape are refused before compiling, naming the limit, under
// the default limits and under configured ones.
func TestCompileBombsRefused(t *testing.T) {
	cases := []struct {
		name   string
		wasm   []byte
		limits host.CompileLimits
		limit  string
	}{
		{"40,000 nested blocks", nestedModule(0x02, 40_000, 0, 0), host.CompileLimits{}, "compile_limits.nesting: 10001"},
		{"101 nested loops", nestedModule(0x03, 101, 0, 0), host.CompileLimits{}, "compile_limits.loop_nesting: 101"},
		{"2,000 locals across 600 ifs", nestedModule(0x02, 0, 2000, 600), host.CompileLimits{}, "compile_limits.local_blocks"},
		{"12,000 locals", nestedModule(0x02, 0, 12_000, 0), host.CompileLimits{}, "compile_limits.locals: 12000"},
		{"20,000 ifs in sequence", nestedModule(0x02, 0, 2, 20_000), host.CompileLimits{}, "compile_limits.blocks: 10001"},
		{"configured nesting", nestedModule(0x02, 101, 0, 0), host.CompileLimits{Nesting: 100}, "compile_limits.nesting: 101 exceeds the limit of 100"},
		{"configured module size", nestedModule(0x02, 101, 0, 0), host.CompileLimits{ModuleBytes: 100}, "compile_limits.module_bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := modulePipeline(c.wasm)
			cfg.CompileLimits = c.limits
			_, err := host.New(context.Background(), cfg)
			require.Error(t, err)
			assert.ErrorIs(t, err, host.ErrTooComplex)
			var le *host.LoadError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "bomb", le.Plugin)
			assert.Contains(t, err.Error(), c.limit)
		})
	}
}

// holdCompiles holds every compile, once started, until the test ends.
func holdCompiles(t *testing.T) <-chan struct{} {
	started, release := make(chan struct{}, 64), make(chan struct{})
	engine.TestHookCompile = func() {
		started <- struct{}{}
		<-release
	}
	t.Cleanup(func() {
		close(release)
		engine.TestHookCompile = nil
	})
	return started
}

// TestNewHonoursContextWhileCompiling: a load canceled, or past its
// compile deadline, while a module is compiling returns with a typed error
// without waiting for the compile (the compile is held until the test
// ends, so only an abandoned compile lets New return at all).
func TestNewHonoursContextWhileCompiling(t *testing.T) {
	wasm, err := testwasm.WAT("testdata/hostile/trap.wat")
	require.NoError(t, err)
	t.Run("canceled", func(t *testing.T) {
		started := holdCompiles(t)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			cancel()
		}()
		_, err := host.New(ctx, modulePipeline(wasm))
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, host.ErrCompile)
		var le *host.LoadError
		require.ErrorAs(t, err, &le)
	})
	t.Run("compile deadline", func(t *testing.T) {
		holdCompiles(t)
		cfg := modulePipeline(wasm)
		cfg.CompileTimeout = 1 // ns: passes while the compile is held
		_, err := host.New(context.Background(), cfg)
		require.Error(t, err)
		assert.ErrorIs(t, err, host.ErrCompileTimeout)
		assert.Contains(t, err.Error(), "did not compile within its deadline")
	})
	t.Run("already canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := host.New(ctx, modulePipeline(wasm))
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestCompileConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg   host.Config
		field string
	}{
		{host.Config{CompileTimeout: -1}, "compile_timeout"},
		{host.Config{CompileLimits: host.CompileLimits{Nesting: -1}}, "compile_limits.nesting"},
		{host.Config{CompileLimits: host.CompileLimits{TotalDepth: -5}}, "compile_limits.total_depth"},
	} {
		t.Run(c.field, func(t *testing.T) {
			_, err := host.New(context.Background(), c.cfg)
			var ce *host.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, c.field, ce.Field)
		})
	}
}

// TestCacheDirUnsafe: a compilation cache others can write is a config
// error naming cache_dir and the path.
func TestCacheDirUnsafe(t *testing.T) {
	wasm, err := testwasm.WAT("testdata/hostile/trap.wat")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "cache")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	cfg := modulePipeline(wasm)
	cfg.CacheDir = dir
	_, err = host.New(context.Background(), cfg)
	require.Error(t, err)
	assert.ErrorIs(t, err, host.ErrCacheUnsafe)
	var ce *host.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "cache_dir", ce.Field)
	assert.Contains(t, err.Error(), dir)
}
