package rewrite

// WASI imports whose work the guest sizes.
//
// The runtime serves WASI preview 1 in Go, and a Go host function runs to
// its end: the interrupt word is not tested inside it. Most of the
// functions do a fixed amount of work, but a few loop over, copy or fill
// as much as a guest's arguments ask for — with a 1 GiB memory, seconds of
// work in one call: random_get fills buf_len bytes, poll_oneoff walks
// nsubscriptions entries, fd_read, fd_write, fd_pread and fd_pwrite walk
// iovs_len iovecs (zero-length ones cost the loop and nothing else), and
// the path_* functions copy and clean the path before they look at the
// descriptor. The rewrite therefore sends every direct call of those
// imports through an appended guard of the import's own type:
//
//   - random_get runs in chunks of at most Options.ChunkBytes, testing the
//     interrupt word and passing a safepoint between them, after the bounds
//     check the import itself makes (EFAULT, nothing written);
//   - the others return an errno without calling the import when a count or
//     a length is over the limit POSIX gives the same call: EINVAL for more
//     than MaxIovecs iovecs (readv/writev, IOV_MAX) or MaxSubscriptions
//     subscriptions (poll, over its descriptor limit), ENAMETOOLONG for a
//     path over MaxPathBytes (PATH_MAX). Within the limits the import is
//     called with the same arguments, so its answer is unchanged.
//
// An import is guarded only when its type is the WASI one; any other type
// fails at instantiation anyway. A guarded import that could be reached
// other than by a direct call — a table element, ref.func, an export — is
// refused (ErrUnsupported): the guard would not be on that path.

const (
	// MaxIovecs is the most iovecs a guarded fd_read, fd_write, fd_pread or
	// fd_pwrite passes on (IOV_MAX on Linux).
	MaxIovecs = 1024
	// MaxSubscriptions is the most subscriptions a guarded poll_oneoff
	// passes on. A Go guest's scheduler subscribes one clock and one entry
	// per descriptor it waits on.
	MaxSubscriptions = 1024
	// MaxPathBytes is the longest path a guarded path_* function passes on
	// (PATH_MAX on Linux, with its terminating NUL).
	MaxPathBytes = 4096
)

// WASI preview 1 errno values (wasi_snapshot_preview1, "errno").
const (
	errnoFault       = 21
	errnoInval       = 28
	errnoNameTooLong = 37
)

// wasiModule is the import module whose functions are guarded.
const wasiModule = "wasi_snapshot_preview1"

// bound is one limit of a guard: parameter param is at most max, else the
// guard returns errno.
type bound struct {
	param byte
	max   uint32
	errno int32
}

// wasiGuard is what the rewrite does for one WASI function.
type wasiGuard struct {
	params string // the WASI parameter types; every result is one i32 errno
	bounds []bound
	chunk  bool // random_get: the (buf, len) of parameters 0 and 1 in chunks
}

const (
	i32 = string(rune(valI32))
	i64 = string(rune(valI64))
)

var wasiGuards = func() map[string]wasiGuard {
	iovs := []bound{{param: 2, max: MaxIovecs, errno: errnoInval}}
	path := func(params ...byte) []bound {
		var b []bound
		for _, p := range params {
			b = append(b, bound{param: p, max: MaxPathBytes, errno: errnoNameTooLong})
		}
		return b
	}
	return map[string]wasiGuard{
		"random_get":              {params: i32 + i32, chunk: true},
		"poll_oneoff":             {params: i32 + i32 + i32 + i32, bounds: []bound{{param: 2, max: MaxSubscriptions, errno: errnoInval}}},
		"fd_read":                 {params: i32 + i32 + i32 + i32, bounds: iovs},
		"fd_write":                {params: i32 + i32 + i32 + i32, bounds: iovs},
		"fd_pread":                {params: i32 + i32 + i32 + i64 + i32, bounds: iovs},
		"fd_pwrite":               {params: i32 + i32 + i32 + i64 + i32, bounds: iovs},
		"path_create_directory":   {params: i32 + i32 + i32, bounds: path(2)},
		"path_filestat_get":       {params: i32 + i32 + i32 + i32 + i32, bounds: path(3)},
		"path_filestat_set_times": {params: i32 + i32 + i32 + i32 + i64 + i64 + i32, bounds: path(3)},
		"path_link":               {params: i32 + i32 + i32 + i32 + i32 + i32 + i32, bounds: path(3, 6)},
		"path_open":               {params: i32 + i32 + i32 + i32 + i32 + i64 + i64 + i32 + i32, bounds: path(3)},
		"path_readlink":           {params: i32 + i32 + i32 + i32 + i32 + i32, bounds: path(2)},
		"path_remove_directory":   {params: i32 + i32 + i32, bounds: path(2)},
		"path_rename":             {params: i32 + i32 + i32 + i32 + i32 + i32, bounds: path(2, 5)},
		"path_symlink":            {params: i32 + i32 + i32 + i32 + i32, bounds: path(1, 4)},
		"path_unlink_file":        {params: i32 + i32 + i32, bounds: path(2)},
	}
}()

// guarded is one guarded import of the input.
type guarded struct {
	name  string
	fn    uint32 // the import's function index
	typ   uint32 // its type index, also the guard's
	rule  wasiGuard
	used  bool   // some body calls it: the guard is appended
	index uint32 // the guard's function index (encode)
}

// guardImport records a function import if it is a guarded WASI function
// of the WASI type. fn is its function index, typ its type index.
func (m *module) guardImport(module, name string, fn, typ uint32) {
	if module != wasiModule {
		return
	}
	g, ok := wasiGuards[name]
	if !ok || int(typ) >= len(m.sigs) || m.sigs[typ] != g.params+"\x00"+i32 {
		return
	}
	if m.guardOf == nil {
		m.guardOf = map[uint32]int{}
	}
	m.guardOf[fn] = len(m.guards)
	m.guards = append(m.guards, guarded{name: name, fn: fn, typ: typ, rule: g})
}

// refuseIndirect refuses a reference to a guarded import other than a
// direct call: a table element, ref.func or an export would reach the
// import without its guard.
func (m *module) refuseIndirect(off int, fn uint32, what string) error {
	if i, ok := m.guardOf[fn]; ok {
		return &Error{Offset: off, Reason: what + " of the WASI import " + m.guards[i].name + ", whose calls are guarded: only direct calls are rewritten", Err: ErrUnsupported}
	}
	return nil
}

// guardBody is the code of the guard for g, which calls the import at
// index imp.
func guardBody(g wasiGuard, imp uint32, ix indices, chunk uint32) []byte {
	callImp := appendULEB([]byte{0x10}, uint64(imp))
	if g.chunk {
		return randomBody(callImp, ix, chunk)
	}
	b := []byte{0x00} // no locals
	for _, bd := range g.bounds {
		b = append(b, 0x20, bd.param, 0x41) // local.get p; i32.const max
		b = appendSLEB(b, int64(int32(bd.max)))
		b = append(b, 0x4b, 0x04, 0x40, 0x41) // i32.gt_u; if; i32.const errno
		b = appendSLEB(b, int64(bd.errno))
		b = append(b, 0x0f, 0x0b) // return; end
	}
	for p := range len(g.params) {
		b = append(b, 0x20, byte(p))
	}
	b = append(b, callImp...)
	return append(b, 0x0b)
}

// randomBody is the guard of random_get(buf, len): the bounds check of the
// import (EFAULT unless buf+len fits in memory, nothing written), then the
// import over chunks of at most chunk bytes, each preceded by the interrupt
// test and a safepoint; the first failing chunk's errno is returned.
func randomBody(callImp []byte, ix indices, chunk uint32) []byte {
	b := []byte{0x01, 0x01, valI32} // one i32 local: the errno of a chunk
	b = append(b,
		0x20, 0, 0xad, // local.get buf; i64.extend_i32_u
		0x20, 1, 0xad, // local.get len; i64.extend_i32_u
		0x7c,             // i64.add
		0x3f, 0x00, 0xad, // memory.size; i64.extend_i32_u
		0x42, 16, 0x86, // i64.const 16; i64.shl (pages → bytes)
		0x56, 0x04, 0x40, 0x41, errnoFault, 0x0f, 0x0b, // i64.gt_u; if; i32.const EFAULT; return; end
		0x02, 0x40, 0x03, 0x40, // block; loop
	)
	b = safepoint(interruptTest(b, ix))
	c := appendSLEB([]byte{0x41}, int64(int32(chunk))) // i32.const chunk
	b = append(append(b, 0x20, 1), c...)
	b = append(b, 0x4d, 0x0d, 1) // i32.le_u; br_if 1 (the last chunk)
	b = append(append(b, 0x20, 0), c...)
	b = append(b, callImp...)
	b = append(b, 0x22, 2, 0x04, 0x40, 0x20, 2, 0x0f, 0x0b) // local.tee e; if; local.get e; return; end
	b = append(append(b, 0x20, 0), c...)
	b = append(b, 0x6a, 0x21, 0) // i32.add; local.set buf
	b = append(append(b, 0x20, 1), c...)
	b = append(b, 0x6b, 0x21, 1)       // i32.sub; local.set len
	b = append(b, 0x0c, 0, 0x0b, 0x0b) // br 0; end loop; end block
	b = append(b, 0x20, 0, 0x20, 1)
	b = append(b, callImp...)
	return append(b, 0x0b)
}
