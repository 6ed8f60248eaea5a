;; Calls the host once and returns at once, with no loop after the call: an
;; interrupt that fires during the host call is never seen by the guest.
(module
  (import "gatehost_v1" "call" (func $call (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 1024) "test.cancel")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (drop (call $call (i32.const 1024) (i32.const 11) (i32.const 1024) (i32.const 0)))
    ;; 4096 << 32 | 2: two bytes at 4096
    (i64.const 17592186044418)))
