;; A loop calling the host's call function (gatehost_v1.call), which the test
;; makes block until the call's context ends.
(module
  (import "gatehost_v1" "call" (func $call (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 1024) "test.block")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop $spin
      (drop (call $call (i32.const 1024) (i32.const 10) (i32.const 1024) (i32.const 0)))
      (br $spin))
    (i64.const 0)))
