;; accept-large: accept-all with room for a large request. Its memory is
;; 160 pages (10 MiB) and gate_alloc hands out 64 KiB onwards, so a request
;; of up to 9 MiB fits; the answer is accept-all's. Used by
;; host/entry_test.go (a subject over host/subject's default 4 MiB, under
;; the configured max_subject_bytes, must reach the gates).
(module
  (memory (export "memory") 160)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"accept-large\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\",\"tool_call\",\"merge\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 106
  (func (export "gate_describe") (result i64) (i64.const 68719476842))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 65536))
  (data (i32.const 1024) "{\"verdict\":\"accepted\",\"basis\":\"verified\",\"evidence\":{\"n\":12345678901234567890,\"neg\":-9007199254740993,\"frac\":0.30000000000000000000001,\"exp\":1E+2,\"nested\":[{\"big\":123456789012345678901234567890}],\"s\":\"x\"},\"findings\":[{\"code\":\"exact_numbers\",\"severity\":\"advisory\",\"message\":\"numbers that a float64 cannot hold\",\"details\":{\"u64\":18446744073709551615,\"list\":[9007199254740993,1.10]}}]}")
  ;; 1024 << 32 | 382
  (func (export "gate_evaluate") (param i32 i32) (result i64) (i64.const 4398046511486))
)
