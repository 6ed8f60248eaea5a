;; many-problems: every kind of shape problem at once; Compile refuses with
;; the first (the forbidden function import), Inspect lists them all.
(module
  (import "env" "steal" (func $steal))
  (import "gatehost_v1" "not_a_host_function" (func $nope))
  (import "env" "mem" (memory 1))
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i32) (i32.const 0))
  (func (export "gate_evaluate") (param i32 i32) (result i64) (unreachable))
  (func (export "_initialize") (param i32)))
