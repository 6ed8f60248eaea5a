;; ungranted-capability: gate_evaluate calls catalog.list, which the stage
;; does not grant, ignores the capability_denied answer and accepts anyway.
;; Expected: capability_denied (an acceptance after a denied call is not
;; trusted: the gate cannot have checked what it asked to check).
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
  (data (i32.const 2048) "{\"verdict\":\"accepted\",\"basis\":\"verified\",\"evidence\":{\"catalog\":\"ok\"}}")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (drop (call $call (i32.const 1024) (i32.const 12) (i32.const 1040) (i32.const 2)))
    ;; 2048 << 32 | 70
    (i64.const 8796093022277))
)
