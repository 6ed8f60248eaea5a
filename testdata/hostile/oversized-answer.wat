;; oversized-answer: gate_evaluate claims an answer of 2 MiB + 1 bytes, inside
;; its 40 pages of memory but above the host's default 1 MiB response cap.
;; Expected: abi_violation.
(module
  (memory (export "memory") 40)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  ;; 65536 << 32 | 2097153
  (func (export "gate_evaluate") (param i32 i32) (result i64) (i64.const 281474978807809))
)
