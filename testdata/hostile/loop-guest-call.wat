;; loop-guest-call: gate_evaluate spins in a loop that calls a guest function.
;; Expected: plugin_timeout.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func $add (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (local $n i32)
    (loop $spin
      (local.set $n (call $add (local.get $n)))
      (br $spin))
    (i64.const 0))
)
