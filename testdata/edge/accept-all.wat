;; accept-all: accepts every subject of every kind, whatever it holds, with
;; evidence and an advisory finding whose numbers a float64 cannot hold
;; exactly. Used by host/undecodable_test.go (the host, not a gate, must
;; refuse an undecodable subject) and host/evidence_numbers_test.go (the
;; numbers must reach the Decision and the event log digit for digit).
(module
  (memory (export "memory") 4)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"accept-all\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\",\"tool_call\",\"merge\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 104
  (func (export "gate_describe") (result i64) (i64.const 68719476840))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 8192))
  (data (i32.const 1024) "{\"verdict\":\"accepted\",\"basis\":\"verified\",\"evidence\":{\"n\":12345678901234567890,\"neg\":-9007199254740993,\"frac\":0.30000000000000000000001,\"exp\":1E+2,\"nested\":[{\"big\":123456789012345678901234567890}],\"s\":\"x\"},\"findings\":[{\"code\":\"exact_numbers\",\"severity\":\"advisory\",\"message\":\"numbers that a float64 cannot hold\",\"details\":{\"u64\":18446744073709551615,\"list\":[9007199254740993,1.10]}}]}")
  ;; 1024 << 32 | 382
  (func (export "gate_evaluate") (param i32 i32) (result i64) (i64.const 4398046511486))
)
