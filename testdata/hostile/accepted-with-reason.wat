;; accepted-with-reason: "accepted" carrying reason "plugin_trap", a host code
;; that would then stand in the decision and the log beside an acceptance.
;; Expected: abi_violation (a reason belongs to an inconclusive verdict).
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 1024) "{\"verdict\":\"accepted\",\"reason\":\"plugin_trap\",\"evidence\":{\"checked\":true}}")
  ;; 1024 << 32 | 73
  (func (export "gate_evaluate") (param i32 i32) (result i64) (i64.const 4398046511177))
)
