;; deep-recursion: gate_evaluate recurses without end until the runtime's
;; call stack is exhausted.
;; Expected: plugin_trap.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func $down (param $n i64) (result i64)
    (i64.add (call $down (i64.add (local.get $n) (i64.const 1))) (i64.const 1)))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (call $down (i64.const 0)))
)
