package engine

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/gatehost/gatehost/internal/safefile"
)

// The compilation cache.
//
// wazero's file cache stores native code keyed by a digest of the module and
// loads whatever a file of that name holds, checked only by a CRC32 it
// stores alongside: anyone who can edit an entry and recompute the CRC has
// the host run their code, pin or no pin; and one damaged entry fails every
// later compile of that module. gatehost therefore never lets wazero read
// the cache directory. The directory is a store of entries, each
// authenticated by an HMAC-SHA256 under a key kept in the directory
// (CacheKeyFile, 0600, made on first use). Each Engine has a private
// staging directory (os.MkdirTemp, 0700), the only directory wazero reads
// and writes; it lives in the cache directory's .staging and is removed
// on Close, or by the next host when its owner died. Before a module is compiled, the entries an index lists for
// its sha256 are checked, and those whose HMAC verifies are copied into
// staging; an entry that does not verify is deleted and logged, and wazero
// recompiles it. After the compile, the entries wazero added to staging
// are authenticated, written back to the store, and indexed.
//
// Trust boundary: whoever can write the cache directory and read its key
// can make the host run native code of their choosing, exactly like
// whoever can write the gatehost binary. So the directory, and the key,
// must belong to the user running the host and be writable by no one else;
// OpenCache refuses anything else with a *CacheError.
//
// Layout of a cache directory:
//
//	gatehost-cache.key        32 random bytes, 0600
//	<runtime>/<entry>         native code, in the runtime's own format
//	.mac/<runtime>/<entry>    hex HMAC-SHA256(key, macContext || <runtime>/<entry> || 0 || content)
//	.index/<runtime>/<sha256> the entry names compiling that module produced
//	.rewritten/<sha256>-v<N>  a module rewritten for interruption (package
//	                          rewrite, Version N) from the module of that
//	                          sha256: 32 bytes of HMAC-SHA256(key,
//	                          rewriteContext || name || 0 || module), then
//	                          the module
//
// <runtime> is the runtime's version directory (such as
// wazero-v1.12.0-amd64-linux) and <entry> its 64-hex-digit key.

// CacheKeyFile is the name of the cache directory's HMAC key.
const CacheKeyFile = "gatehost-cache.key"

const (
	macDir     = ".mac"
	indexDir   = ".index"
	macContext = "gatehost compilation cache entry v1\x00"
	rewriteDir = ".rewritten"
	// rewriteContext separates the tags of rewritten modules from those
	// of compiled entries, so one can never pass for the other.
	rewriteContext = "gatehost rewritten module v1\x00"
	keyBytes       = 32
)

// ErrCacheUnsafe is the kind of every *CacheError: the compilation cache
// directory or its key could be written (or the key read) by someone other
// than the user running the host.
var ErrCacheUnsafe = errors.New("compilation cache is not private to this user")

// CacheError is a compilation cache the host refuses to use, naming the
// path and why.
type CacheError struct {
	Path   string
	Reason string
	Err    error
}

func (e *CacheError) Error() string {
	s := "compilation cache " + e.Path + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *CacheError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCacheUnsafe}
	}
	return []error{ErrCacheUnsafe, e.Err}
}

// authCache is one Engine's view of a cache directory: a staging directory
// the runtime's own file cache works in, and the store it was filled from.
type authCache struct {
	dir     string   // the store, as configured (absolute)
	staging string   // private; removed by Close
	lock    *os.File // held while the staging directory is in use
	runtime string   // the runtime's version directory name
	key     []byte
	rc      rt.CompilationCache
	log     *slog.Logger

	mu     sync.Mutex
	synced map[string]bool // entries in both staging and store (authenticated)
}

// openCache checks dir (creating it 0700 when missing), loads or makes its
// key, and stages every entry that authenticates. The error is a
// *CacheError for an unsafe directory or key.
func openCache(dir string, log *slog.Logger) (*authCache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &CacheError{Path: dir, Reason: "cannot resolve", Err: err}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, &CacheError{Path: abs, Reason: "cannot create", Err: err}
	}
	if err := checkPrivate(abs, true); err != nil {
		return nil, err
	}
	key, err := loadKey(filepath.Join(abs, CacheKeyFile))
	if err != nil {
		return nil, err
	}
	removeStaleStaging(filepath.Join(abs, stagingDir), log)
	staging, lock, err := newStaging(filepath.Join(abs, stagingDir))
	if err != nil {
		return nil, &CacheError{Path: filepath.Join(abs, stagingDir), Reason: "cannot create a staging directory", Err: err}
	}
	c := &authCache{dir: abs, staging: staging, lock: lock, key: key, log: log, synced: map[string]bool{}}
	fail := func(err error) (*authCache, error) {
		_ = os.RemoveAll(staging)
		_ = lock.Close()
		return nil, err
	}
	rc, err := rt.NewCompilationCacheWithDir(staging)
	if err != nil {
		return fail(fmt.Errorf("compilation cache: %w", err))
	}
	c.rc = rc
	// The runtime made its version directory in staging; mirror it.
	ents, err := os.ReadDir(staging)
	for _, e := range ents {
		if e.IsDir() {
			c.runtime = e.Name()
		}
	}
	if err != nil || c.runtime == "" {
		_ = rc.Close(context.Background())
		return fail(fmt.Errorf("compilation cache: unexpected staging layout in %s: %v", staging, err))
	}
	for _, d := range []string{filepath.Join(abs, c.runtime), filepath.Join(abs, macDir, c.runtime), filepath.Join(abs, indexDir, c.runtime), filepath.Join(abs, rewriteDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			_ = rc.Close(context.Background())
			return fail(&CacheError{Path: d, Reason: "cannot create", Err: err})
		}
		if err := checkPrivate(d, true); err != nil {
			_ = rc.Close(context.Background())
			return fail(err)
		}
	}
	return c, nil
}

// loadKey reads the key at path, or creates it: written to a temporary
// file and linked into place, so two hosts starting at once agree on one
// key and neither reads a partial one.
func loadKey(path string) ([]byte, error) {
	for range 2 {
		key, err := readSmall(path, keyBytes)
		if err == nil {
			if len(key) != keyBytes {
				return nil, &CacheError{Path: path, Reason: fmt.Sprintf("key is %d bytes, want %d (delete the cache directory to start afresh)", len(key), keyBytes)}
			}
			return key, nil
		}
		var ce *CacheError
		if errors.As(err, &ce) {
			return nil, err
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, &CacheError{Path: path, Reason: "cannot read key", Err: err}
		}
		key = make([]byte, keyBytes)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		tmp, err := os.CreateTemp(filepath.Dir(path), CacheKeyFile+".*.tmp")
		if err != nil {
			return nil, &CacheError{Path: path, Reason: "cannot create key", Err: err}
		}
		_, werr := tmp.Write(key)
		cerr := tmp.Close()
		lerr := os.Link(tmp.Name(), path)
		_ = os.Remove(tmp.Name())
		if err := errors.Join(werr, cerr); err != nil {
			return nil, &CacheError{Path: path, Reason: "cannot write key", Err: err}
		}
		if lerr == nil {
			return key, nil
		}
		if !errors.Is(lerr, fs.ErrExist) {
			return nil, &CacheError{Path: path, Reason: "cannot write key", Err: lerr}
		}
		// Another host made it first: read theirs.
	}
	return nil, &CacheError{Path: path, Reason: "key keeps changing"}
}

// readSmall reads the key at path, at most max+1 bytes, after checking
// that it is a private regular file (never a pipe or device, which could
// block or never end).
func readSmall(path string, max int) ([]byte, error) {
	if _, err := os.Lstat(path); err != nil {
		return nil, err
	}
	if err := checkPrivate(path, false); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(max)+1))
}

func (c *authCache) mac(name string, content []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(macContext))
	h.Write([]byte(c.runtime + "/" + name))
	h.Write([]byte{0})
	h.Write(content)
	return h.Sum(nil)
}

// isEntryName reports whether name is one of the runtime's entry names (64
// hex digits); its temporary files and anything else are left alone.
func isEntryName(name string) bool {
	if len(name) != 64 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil
}

// maxIndexBytes caps a module's index file; maxIndexNames the entry
// names it keeps.
const (
	maxIndexBytes = 4 << 10
	maxIndexNames = 16
)

// before is what prepare saw in staging, for record to tell what a compile
// added.
type before struct {
	module string // hex sha256 of the module
	names  map[string]bool
}

// moduleSum is the hex sha256 of a module's bytes, its key in the index.
func moduleSum(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// compiling holds, per cache directory and module, a channel closed when
// the compile in progress in this process ends.
var compiling = struct {
	sync.Mutex
	m map[string]chan struct{}
}{m: map[string]chan struct{}{}}

// await waits until no other compile of module into this cache directory
// is in progress in this process, then marks one in progress; done ends
// it. A second compile of the same bytes (another memory limit, another
// host, a retry after an abandoned compile) thus finds the first one's
// entry instead of compiling again beside it. The error is ctx's.
func (c *authCache) await(ctx context.Context, module string) (done func(), err error) {
	key := c.dir + "\x00" + module
	for {
		compiling.Lock()
		ch, busy := compiling.m[key]
		if !busy {
			ch = make(chan struct{})
			compiling.m[key] = ch
			compiling.Unlock()
			return func() {
				compiling.Lock()
				delete(compiling.m, key)
				compiling.Unlock()
				close(ch)
			}, nil
		}
		compiling.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// prepare stages the authenticated entries the index lists for the module
// (the runtime will look for one of them) and deletes those that do not
// authenticate. Only what a compile needs is read: the store may hold
// entries of many modules and runtime versions.
func (c *authCache) prepare(module string) before {
	b := before{module: module}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.readIndex(b.module) {
		if c.synced[name] {
			continue
		}
		path := filepath.Join(c.dir, c.runtime, name)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			continue // pruned, or never saved
		}
		content, reason := c.verify(path, name)
		if reason != "" {
			c.discard(name, reason)
			continue
		}
		if err := os.WriteFile(filepath.Join(c.staging, c.runtime, name), content, 0o600); err != nil {
			c.log.Warn("engine: compilation cache entry not staged", "path", path, "err", err)
			continue
		}
		c.synced[name] = true
	}
	b.names = c.stagedNames()
	return b
}

// readIndex returns the entry names recorded for a module; none when the
// index is missing or unreadable (the module is then compiled afresh). The
// index needs no tag: it only says which entries to try, and each entry is
// authenticated on its own.
func (c *authCache) readIndex(module string) []string {
	path := filepath.Join(c.dir, indexDir, c.runtime, module)
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIndexBytes {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var names []string
	for _, n := range strings.Fields(string(b)) {
		if isEntryName(n) && len(names) < maxIndexNames {
			names = append(names, n)
		}
	}
	return names
}

// stagedNames lists the entries in staging.
func (c *authCache) stagedNames() map[string]bool {
	names := map[string]bool{}
	ents, _ := os.ReadDir(filepath.Join(c.staging, c.runtime))
	for _, e := range ents {
		if isEntryName(e.Name()) {
			names[e.Name()] = true
		}
	}
	return names
}

// verify reads the entry at path and checks its HMAC; reason says why it
// does not authenticate.
func (c *authCache) verify(path, name string) (content []byte, reason string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, "unreadable: " + err.Error()
	}
	if !fi.Mode().IsRegular() {
		return nil, "not a regular file"
	}
	content, err = os.ReadFile(path)
	if err != nil {
		return nil, "unreadable: " + err.Error()
	}
	tagPath := filepath.Join(c.dir, macDir, c.runtime, name)
	if fi, err := os.Lstat(tagPath); err != nil || !fi.Mode().IsRegular() {
		return nil, "no authentication tag"
	}
	tag, err := os.ReadFile(tagPath)
	if err != nil {
		return nil, "no authentication tag"
	}
	want, err := hex.DecodeString(string(bytes.TrimSpace(tag)))
	if err != nil || !hmac.Equal(want, c.mac(name, content)) {
		return nil, "authentication tag does not match (entry modified or damaged)"
	}
	return content, ""
}

func (c *authCache) discard(name, reason string) {
	path := filepath.Join(c.dir, c.runtime, name)
	c.log.Warn("engine: compilation cache entry discarded; the module is compiled afresh", "path", path, "reason", reason)
	_ = os.Remove(path)
	_ = os.Remove(filepath.Join(c.dir, macDir, c.runtime, name))
}

// record authenticates the entries the runtime added to staging since
// prepare and writes them to the store, and records them in the module's
// index. Compiles running at once may each record the others' entries
// too: an extra name in an index costs one entry staged for nothing. A
// failure costs only a later recompilation, so it is logged, not
// returned.
func (c *authCache) record(b before) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var added []string
	for name := range c.stagedNames() {
		if !b.names[name] {
			added = append(added, name)
		}
		if c.synced[name] {
			continue
		}
		if err := c.save(name); err != nil {
			c.log.Warn("engine: compilation cache entry not saved", "entry", name, "err", err)
			continue
		}
		c.synced[name] = true
	}
	if len(added) == 0 {
		return
	}
	names := c.readIndex(b.module)
	for _, n := range added {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > maxIndexNames {
		names = names[len(names)-maxIndexNames:]
	}
	path := filepath.Join(c.dir, indexDir, c.runtime, b.module)
	if err := writeAtomic(path, []byte(strings.Join(names, "\n")+"\n")); err != nil {
		c.log.Warn("engine: compilation cache index not saved", "path", path, "err", err)
	}
}

// save tags the staged entry name and writes tag and entry to the store.
// The tag goes first: a reader that finds an entry with an old or missing
// tag only recompiles it.
func (c *authCache) save(name string) error {
	content, err := os.ReadFile(filepath.Join(c.staging, c.runtime, name))
	if err != nil {
		return err
	}
	tag := []byte(hex.EncodeToString(c.mac(name, content)) + "\n")
	if err := writeAtomic(filepath.Join(c.dir, macDir, c.runtime, name), tag); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(c.dir, c.runtime, name), content)
}

// writeAtomic writes b to a temporary file beside path (0600) and renames
// it over path. Not fsynced: an entry a crash tears fails its tag and is
// compiled again.
func writeAtomic(path string, b []byte) error {
	return safefile.Replace{NoSync: true}.WriteFile(path, b, 0o600)
}

// Close releases the runtime's cache and removes the staging directory.
func (c *authCache) Close(ctx context.Context) error {
	err := c.rc.Close(ctx)
	err = errors.Join(err, os.RemoveAll(c.staging))
	return errors.Join(err, c.lock.Close())
}

// A staging directory lives in the cache directory's .staging, holding a
// lock file locked (flock) for as long as its engine is open, so that a
// host killed before Close leaves a directory the next host can tell is
// stale and remove.
const (
	stagingDir  = ".staging"
	stagingLock = "lock"
)

// newStaging makes a staging directory under parent and locks it.
func newStaging(parent string) (dir string, lock *os.File, err error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp(parent, "s-")
	if err != nil {
		return "", nil, err
	}
	lock, err = os.OpenFile(filepath.Join(dir, stagingLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = filelock.TryLock(lock)
	}
	if err != nil {
		if lock != nil {
			_ = lock.Close()
		}
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, lock, nil
}

// removeStaleStaging removes the staging directories under parent whose
// lock no process holds. Where flock is not available (lockingWorks is
// false) a live directory cannot be told from a stale one, and none is
// removed.
func removeStaleStaging(parent string, log *slog.Logger) {
	if !lockingWorks {
		return
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		dir := filepath.Join(parent, e.Name())
		f, err := os.OpenFile(filepath.Join(dir, stagingLock), os.O_RDWR, 0)
		if err != nil {
			continue // being made right now, or not ours
		}
		if filelock.TryLock(f) == nil {
			log.Debug("engine: removing a stale compilation cache staging directory", "path", dir)
			_ = os.RemoveAll(dir)
		}
		_ = f.Close()
	}
}
