;; output-flood: gate_evaluate writes 4 MiB to stdout and 4 MiB to stderr (64
;; writes of one 64 KiB page each), then traps.
;; Expected: plugin_trap, with only the 8 KiB tail of each stream in evidence.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func $flood (param $fd i32)
    (local $i i32)
    ;; iovec at 0: {buf 65536, len 65536}; bytes written at 8
    (i32.store (i32.const 0) (i32.const 65536))
    (i32.store (i32.const 4) (i32.const 65536))
    (loop $more
      (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $more (i32.lt_u (local.get $i) (i32.const 64)))))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (memory.fill (i32.const 65536) (i32.const 0x41) (i32.const 65536))
    (call $flood (i32.const 1))
    (call $flood (i32.const 2))
    (unreachable))
)
