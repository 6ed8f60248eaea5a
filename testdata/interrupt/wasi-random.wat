;; random_get over a whole 256 MiB memory, forever: one WASI call the
;; runtime serves in Go, stopped between the chunks the rewrite's guard
;; splits it into.
(module
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (memory (export "memory") 4096)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $again
      (drop (call $random (i32.const 0) (i32.const 268435456)))
      (br $again))
    (i64.const 0)))
