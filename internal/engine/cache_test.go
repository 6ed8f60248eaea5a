package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

const (
	pinnedInconclusive = `{"verdict":"inconclusive","reason":"always_inconclusive"}`
	pinnedWAT          = "testdata/cache/pinned.wat"
)

// cacheEntries lists the runtime's entries in a cache directory.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	subs, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, s := range subs {
		if !s.IsDir() || s.Name() == macDir {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(dir, s.Name()))
		require.NoError(t, err)
		for _, e := range ents {
			if isEntryName(e.Name()) {
				out = append(out, filepath.Join(dir, s.Name(), e.Name()))
			}
		}
	}
	return out
}

// retarget rewrites the packed answer pointer of pinned.wat in the native
// code of a cache entry (inconclusive at 512 -> accepted at 1024) and
// recomputes the CRC32C the runtime checks: what an attacker who can write
// the cache, but not read its key, does.
func retarget(t *testing.T, entry []byte) []byte {
	t.Helper()
	if !strings.HasPrefix(rt.Name, "wazero ") {
		t.Skipf("the entry format of %s is not wazero's", rt.Name)
	}
	b := bytes.Clone(entry)
	hdr := 6 + 1 + int(b[6]) + 4
	n := int(binary.LittleEndian.Uint32(b[hdr-4:]))
	off := hdr + 8*n
	exLen := int(binary.LittleEndian.Uint64(b[off:]))
	ex := b[off+8 : off+8+exLen]
	old := binary.LittleEndian.AppendUint64(nil, 512<<32|57)
	i := bytes.Index(ex, old)
	require.GreaterOrEqual(t, i, 0, "the answer constant is in the native code")
	binary.LittleEndian.PutUint64(ex[i:], 1024<<32|70)
	binary.LittleEndian.PutUint32(b[off+8+exLen:], crc32.Checksum(ex, crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestCacheEntryNotDerivedFromModule: whatever happened to a cache entry,
// the next engine runs only code compiled from the module's own bytes,
// answers as with a clean cache, logs the discarded entry with its path,
// and leaves an authenticated entry behind.
func TestCacheEntryNotDerivedFromModule(t *testing.T) {
	wasm := wat(t, pinnedWAT)
	other := wat(t, "testdata/hostile/trap.wat")
	cases := []struct {
		name   string
		tamper func(t *testing.T, dir, entry string)
		reason string
	}{
		{"native code retargeted, CRC recomputed", func(t *testing.T, _, entry string) {
			b, err := os.ReadFile(entry)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(entry, retarget(t, b), 0o600))
		}, "does not match"},
		{"one byte flipped", func(t *testing.T, _, entry string) {
			b, err := os.ReadFile(entry)
			require.NoError(t, err)
			b[len(b)-20] ^= 0xff
			require.NoError(t, os.WriteFile(entry, b, 0o600))
		}, "does not match"},
		{"truncated", func(t *testing.T, _, entry string) {
			require.NoError(t, os.Truncate(entry, 10))
		}, "does not match"},
		{"tag removed", func(t *testing.T, dir, entry string) {
			require.NoError(t, os.Remove(macPath(dir, entry)))
		}, "no authentication tag"},
		{"tag garbage", func(t *testing.T, dir, entry string) {
			require.NoError(t, os.WriteFile(macPath(dir, entry), []byte("zz\n"), 0o600))
		}, "does not match"},
		{"entry and tag of another module moved in", func(t *testing.T, dir, entry string) {
			e := newTestEngine(t, Options{CacheDir: t.TempDir()})
			_, err := e.Compile(context.Background(), other)
			require.NoError(t, err)
			src := cacheEntries(t, e.cache.dir)
			require.Len(t, src, 1)
			for _, p := range [][2]string{{src[0], entry}, {macPath(e.cache.dir, src[0]), macPath(dir, entry)}} {
				b, err := os.ReadFile(p[0])
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p[1], b, 0o600))
			}
		}, "does not match"},
		{"key replaced", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, CacheKeyFile), bytes.Repeat([]byte{7}, keyBytes), 0o600))
		}, "does not match"},
		{"tag replaced by a named pipe", func(t *testing.T, dir, entry string) {
			require.NoError(t, os.Remove(macPath(dir, entry)))
			require.NoError(t, mkfifo(macPath(dir, entry)))
		}, "no authentication tag"},
		{"entry replaced by a named pipe", func(t *testing.T, _, entry string) {
			require.NoError(t, os.Remove(entry))
			require.NoError(t, mkfifo(entry))
		}, "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			clean := newTestEngine(t, Options{CacheDir: dir})
			require.JSONEq(t, pinnedInconclusive, evaluate(t, clean, wasm))
			require.NoError(t, clean.Close(context.Background()))
			entries := cacheEntries(t, dir)
			require.Len(t, entries, 1)
			c.tamper(t, dir, entries[0])

			var logs logBuffer
			e := newTestEngine(t, Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			assert.JSONEq(t, pinnedInconclusive, evaluate(t, e, wasm), "only code compiled from the module runs")
			assert.Contains(t, logs.String(), "compilation cache entry discarded")
			assert.Contains(t, logs.String(), entries[0], "the log names the entry")
			assert.Contains(t, logs.String(), c.reason)
			require.NoError(t, e.Close(context.Background()))

			// The entry was rebuilt: the next engine uses it silently.
			logs = logBuffer{}
			again := newTestEngine(t, Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			assert.JSONEq(t, pinnedInconclusive, evaluate(t, again, wasm))
			assert.NotContains(t, logs.String(), "discarded")
			assert.Len(t, again.cache.synced, 1, "the rebuilt entry authenticates")
		})
	}
}

func macPath(dir, entry string) string {
	return filepath.Join(dir, macDir, filepath.Base(filepath.Dir(entry)), filepath.Base(entry))
}

// TestCacheWarmHit: an authenticated entry is used (staged), and the
// runtime's entry files are private.
func TestCacheWarmHit(t *testing.T) {
	dir := t.TempDir()
	wasm := wat(t, pinnedWAT)
	e := newTestEngine(t, Options{CacheDir: dir})
	require.JSONEq(t, pinnedInconclusive, evaluate(t, e, wasm))
	require.NoError(t, e.Close(context.Background()))
	_, err := os.Stat(e.cache.staging)
	assert.ErrorIs(t, err, os.ErrNotExist, "Close removes the staging directory")
	assert.Equal(t, os.FileMode(0o600), fileMode(t, filepath.Join(dir, CacheKeyFile)))

	var logs logBuffer
	warm := newTestEngine(t, Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.Empty(t, warm.cache.synced, "nothing is read before a compile needs it")
	seen := warm.cache.prepare(compiledSum(t, wasm))
	assert.Len(t, seen.names, 1, "the module's entry is staged before it compiles")
	assert.JSONEq(t, pinnedInconclusive, evaluate(t, warm, wasm))
	assert.Len(t, cacheEntries(t, dir), 1)
	assert.Empty(t, logs.String())

	// Without its index, a module is compiled afresh and indexed again.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, indexDir)))
	cold := newTestEngine(t, Options{CacheDir: dir})
	assert.JSONEq(t, pinnedInconclusive, evaluate(t, cold, wasm))
	assert.Len(t, cold.cache.readIndex(seen.module), 1)
}

// TestCacheDirRefused: a cache others could write, or whose key others
// could read, is refused with a *CacheError naming the path.
func TestCacheDirRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) (open, path string)
	}{
		{"directory writable by others", func(t *testing.T, dir string) (string, string) {
			require.NoError(t, os.Chmod(dir, 0o777))
			return dir, dir
		}},
		{"directory writable by group", func(t *testing.T, dir string) (string, string) {
			require.NoError(t, os.Chmod(dir, 0o770))
			return dir, dir
		}},
		{"key readable by others", func(t *testing.T, dir string) (string, string) {
			k := filepath.Join(dir, CacheKeyFile)
			require.NoError(t, os.WriteFile(k, make([]byte, keyBytes), 0o644))
			require.NoError(t, os.Chmod(k, 0o644))
			return dir, k
		}},
		{"key of the wrong size", func(t *testing.T, dir string) (string, string) {
			k := filepath.Join(dir, CacheKeyFile)
			require.NoError(t, os.WriteFile(k, []byte("short"), 0o600))
			return dir, k
		}},
		{"key is a directory", func(t *testing.T, dir string) (string, string) {
			k := filepath.Join(dir, CacheKeyFile)
			require.NoError(t, os.Mkdir(k, 0o700))
			return dir, k
		}},
		{"key is a named pipe", func(t *testing.T, dir string) (string, string) {
			k := filepath.Join(dir, CacheKeyFile)
			require.NoError(t, mkfifo(k))
			return dir, k
		}},
		{"not a directory", func(t *testing.T, dir string) (string, string) {
			f := filepath.Join(dir, "file")
			require.NoError(t, os.WriteFile(f, nil, 0o600))
			return f, f
		}},
		{"runtime directory writable by others", func(t *testing.T, dir string) (string, string) {
			e := newTestEngine(t, Options{CacheDir: dir})
			sub := filepath.Join(dir, e.cache.runtime)
			require.NoError(t, e.Close(context.Background()))
			require.NoError(t, os.Chmod(sub, 0o777))
			return dir, sub
		}},
		{"owned by another user", func(t *testing.T, dir string) (string, string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			require.NoError(t, os.Chown(dir, 65534, 65534))
			return dir, dir
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open, path := c.setup(t, t.TempDir())
			_, err := New(context.Background(), Options{CacheDir: open, MemoryLimitPages: 16, Calls: nopCalls{}})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrCacheUnsafe)
			var ce *CacheError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.Path)
			assert.Contains(t, err.Error(), path)
		})
	}
}

// TestCacheKeyMadeOnce: two engines opening a new cache directory agree on
// one key, made 0600.
func TestCacheKeyMadeOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "cache")
	a := newTestEngine(t, Options{CacheDir: dir})
	b := newTestEngine(t, Options{CacheDir: dir})
	assert.Equal(t, a.cache.key, b.cache.key)
	assert.Equal(t, os.FileMode(0o700), fileMode(t, dir))
	assert.Equal(t, os.FileMode(0o600), fileMode(t, filepath.Join(dir, CacheKeyFile)))
}

// TestStaleStagingRemoved: a staging directory left by a host that died
// before Close is removed by the next one; one in use is left alone.
func TestStaleStagingRemoved(t *testing.T) {
	if !lockingWorks {
		t.Skip("no flock here: stale staging directories are kept")
	}
	dir := t.TempDir()
	live := newTestEngine(t, Options{CacheDir: dir})
	dead, lock, err := newStaging(filepath.Join(dir, stagingDir))
	require.NoError(t, err)
	require.NoError(t, lock.Close()) // its host died: the lock is gone, the directory stays

	next := newTestEngine(t, Options{CacheDir: dir})
	_, err = os.Stat(dead)
	assert.ErrorIs(t, err, os.ErrNotExist, "the stale directory is removed")
	for _, e := range []*Engine{live, next} {
		_, err := os.Stat(e.cache.staging)
		assert.NoError(t, err, "a directory in use is kept")
	}
	assert.JSONEq(t, pinnedInconclusive, evaluate(t, live, wat(t, pinnedWAT)), "the live engine still compiles")
}
