;; trap: a gate whose gate_evaluate executes `unreachable`.
;; Expected: the stage is inconclusive with reason plugin_trap.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"trap\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  ;; 16 << 32 | 78: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476814))
  (func (export "gate_evaluate") (param i32 i32) (result i64) (unreachable)))
