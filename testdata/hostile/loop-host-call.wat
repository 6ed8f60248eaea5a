;; loop-host-call: gate_evaluate calls gatehost_v1.call forever.
;; Expected: plugin_trap (the 10 001st call of an evaluation traps).
(module
  (import "gatehost_v1" "call" (func $call (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 1024) "catalog.list")
  (data (i32.const 1040) "{}")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $spin
      (drop (call $call (i32.const 1024) (i32.const 12) (i32.const 1040) (i32.const 2)))
      (br $spin))
    (i64.const 0))
)
