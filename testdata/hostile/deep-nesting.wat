;; deep-nesting: accepts with evidence {"x": [[[…]]]} nested 100 000 arrays deep
;; (a 200 040-byte answer, well under the 1 MiB cap), the shape that made the
;; host's decoder and schema validator run seconds past the stage deadline.
;; Expected: abi_violation (deeper than abi.MaxAnswerDepth), found in one pass.
(module
  (memory (export "memory") 4)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 1024))
  ;; 38 bytes of prefix at 4096, then 100 000 "[", 100 000 "]" and "}}"
  (data (i32.const 4096) "{\"verdict\":\"accepted\",\"evidence\":{\"x\":")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (memory.fill (i32.const 4134) (i32.const 0x5b) (i32.const 100000))
    (memory.fill (i32.const 104134) (i32.const 0x5d) (i32.const 100000))
    (i32.store16 (i32.const 204134) (i32.const 0x7d7d))
    ;; 4096 << 32 | 200040
    (i64.const 17592186244456))
)
