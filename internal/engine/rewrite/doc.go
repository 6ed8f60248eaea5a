// Package rewrite makes a WebAssembly module stoppable without help from the
// runtime: it rewrites the module once, at load, so that the guest itself
// counts down at every function entry, return from a call and loop header,
// tests an interrupt word when the count runs out, and traps when the word
// is set.
//
// # Why
//
// Stock wazero stops a runaway guest only with WithCloseOnContextDone, which
// leaves compiled code for Go at every loop header; Go's wasm functions are
// nearly all loops, so that check costs 3–5× on the gates' own work. The
// rewrite puts the check inline instead: a decrement and a branch.
//
// # Design
//
// This is Wasmtime's epoch interruption
// (https://docs.wasmtime.dev/api/wasmtime/struct.Config.html#method.epoch_interruption)
// applied as a load-time rewrite rather than inside a compiler. Module:
//
//   - appends two mutable i32 globals and exports them: the interrupt word
//     (InterruptExport, initially 0) and a countdown (CountdownExport,
//     initially SafepointEvery); the host stops a call by setting the word
//     to non-zero and then the countdown to 0 (api.MutableGlobal.Set);
//   - inserts a test (check in encode.go) at every function entry (after
//     the locals), right after every loop's block type and right after
//     every call and call_indirect, so loops, call trees without loops
//     (recursion, fib-like fan-out) and the way back up a deep stack
//     through loop-free code all stop. The test decrements the countdown;
//     when it reaches 0 it traps if the word is set, and otherwise passes a
//     safepoint, `memory.grow 0`, and restarts the count: wazero serves
//     memory.grow in Go, and Go cannot preempt a goroutine inside compiled
//     wasm code, and a guest that never left it would hold up the process's
//     stop-the-world (garbage collection) and with it the timer that sets
//     the word. A body whose first loop is reached through straight-line
//     code that neither branches nor calls (every function Go compiles)
//     gets no entry test: its loop header's test runs first on every call;
//   - replaces every memory.copy and memory.fill with a call to an appended
//     helper that does the same bounds check as the instruction (trap, nothing
//     written) and then works in chunks of at most Options.ChunkBytes, testing
//     the word and passing a safepoint between chunks, so one instruction over
//     a large memory cannot run past the deadline;
//   - sends every direct call of a WASI import whose work the guest sizes
//     (random_get, poll_oneoff, fd_read/fd_write/fd_pread/fd_pwrite, the
//     path_* functions) through an appended guard: random_get in chunks
//     with the same test between them, the others refused with an errno
//     over POSIX's limits (wasiguard.go), because the runtime serves those
//     imports in Go, where the word is not tested.
//
// Nothing existing is renumbered: the globals, the helpers and their type
// (when no identical type exists) are appended after every existing index. Sections the rewrite does not change are copied byte for byte; the
// output is deterministic.
//
// # What is refused
//
// Module parses every section it needs and every instruction with its
// immediates exactly (https://webassembly.github.io/spec/core/binary/): MVP,
// sign extension, saturating truncation, bulk memory, reference types and
// fixed-width SIMD. It returns an *Error (byte offset, reason) wrapping
//
//   - ErrMalformed for input that is not a well-framed module: truncated
//     input, over-long or over-wide LEB128, sections out of order, counts
//     that disagree, an index past the module's own definitions (the rewrite
//     must not make such a module valid by giving the index a meaning: in
//     particular `global.set` of the interrupt word), memory.copy or
//     memory.fill in a module with no memory;
//   - ErrUnsupported for well-framed input using what the rewrite does not
//     decode — threads (0xFE), exceptions, tail calls, GC, relaxed SIMD,
//     multi-memory, memory64 —, a module that already exports
//     InterruptExport or CountdownExport, or one that puts a guarded WASI
//     import in a table, a ref.func or an export, where its guard would not
//     be.
//
// Module never panics and its work is linear in the input's length.
package rewrite
