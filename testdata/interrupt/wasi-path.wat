;; path_open of a 256 MiB path, forever: the runtime copies and cleans the
;; path in host memory before it finds that no directory is open; the
;; rewrite's guard refuses a path over 4096 bytes (ENAMETOOLONG) and the
;; loop is stopped at its header.
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 4096)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $again
      (drop (call $open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 268435440)
        (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 0)))
      (br $again))
    (i64.const 0)))
