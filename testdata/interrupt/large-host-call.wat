;; large-host-call: gate_evaluate makes one host call (catalog.list) with a
;; 40,000-byte request, then answers accepted.
;; host/stage_deadline_test.go: the host serves a request this large apart from the guest, so a
;; stage whose host call does not answer in time still ends at its deadline.
(module
  (import "gatehost_v1" "call" (func $call (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"],\"capabilities\":[\"catalog\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 108: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476844))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 1024) "catalog.list")
  (data (i32.const 60000) "{\"verdict\":\"accepted\"}")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (drop (call $call (i32.const 1024) (i32.const 12) (i32.const 4096) (i32.const 40000)))
    ;; 60000 << 32 | 22: the answer above
    (i64.const 257698037760022))
)
