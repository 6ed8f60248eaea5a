;; poll_oneoff with 3,000,000 subscriptions, forever. Zeroed memory is a
;; valid subscription (a relative clock of 0 ns), so the runtime would walk
;; every one in a single call; the rewrite's guard refuses more than 1024
;; (EINVAL) and the loop is stopped at its header.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 4096)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $again
      ;; in at 0 (3e6 × 48 bytes), out at 144e6 (3e6 × 32), nevents at 240e6
      (drop (call $poll (i32.const 0) (i32.const 144000000) (i32.const 3000000) (i32.const 240000000)))
      (br $again))
    (i64.const 0)))
