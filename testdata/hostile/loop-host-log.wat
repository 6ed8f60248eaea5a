;; loop-host-log: gate_evaluate calls gatehost_v1.log forever. log never
;; traps (messages past 256 are dropped), so only the deadline stops it.
;; Expected: plugin_timeout.
(module
  (import "gatehost_v1" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 1024) "spam")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $spin
      (call $log (i32.const 0) (i32.const 1024) (i32.const 4))
      (br $spin))
    (i64.const 0))
)
