;; A loop whose body calls a guest function.
(module
  (memory (export "memory") 1)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func $add (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (local $n i32)
    (loop $spin
      (local.set $n (call $add (local.get $n)))
      (br $spin))
    (i64.const 0)))
