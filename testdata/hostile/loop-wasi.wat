;; loop-wasi: gate_evaluate spins calling WASI: sched_yield, then a one-second
;; clock sleep through poll_oneoff (the host gives guests no real sleep).
;; Expected: plugin_timeout.
(module
  (import "wasi_snapshot_preview1" "sched_yield" (func $yield (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  ;; one clock subscription at 2048: tag 0 (clock), clock id 1, timeout 1e9 ns
  (data (i32.const 2064) "\01\00\00\00\00\00\00\00\00\ca\9a\3b\00\00\00\00")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $spin
      (drop (call $yield))
      (drop (call $poll (i32.const 2048) (i32.const 3072) (i32.const 1) (i32.const 3200)))
      (br $spin))
    (i64.const 0))
)
