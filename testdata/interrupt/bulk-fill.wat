;; memory.fill over a 256 MiB memory, forever: one instruction, stopped
;; between the chunks the rewrite splits it into.
(module
  (memory (export "memory") 4096)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $again
      (memory.fill (i32.const 0) (i32.const 7) (i32.const 268435456))
      (br $again))
    (i64.const 0)))
