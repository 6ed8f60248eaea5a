;; Exports a global under the name the interrupt rewrite adds: refused at
;; compile, since the rewrite could not add its own.
(module
  (global $g (mut i32) (i32.const 0))
  (export "gatehost_interrupt" (global $g))
  (memory (export "memory") 1)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 0))
  (func (export "gate_evaluate") (param i32 i32) (result i64) (i64.const 0)))
