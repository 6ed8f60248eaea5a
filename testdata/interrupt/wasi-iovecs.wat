;; fd_write to stdout of 33,554,431 zero-length iovecs (zeroed memory),
;; forever: the runtime would walk them all in one call; the rewrite's guard
;; refuses more than 1024 (EINVAL) and the loop is stopped at its header.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 4096)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $again
      (drop (call $write (i32.const 1) (i32.const 8) (i32.const 33554431) (i32.const 0)))
      (br $again))
    (i64.const 0)))
