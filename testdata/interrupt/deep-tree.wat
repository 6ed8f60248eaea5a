;; Deep recursion without loops, forever: every leaf of an exponential call
;; tree recurses 20,000 frames down and back up.
(module
  (memory (export "memory") 1)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func $down (param $n i32)
    (if (local.get $n) (then (call $down (i32.sub (local.get $n) (i32.const 1))))))
  (func $tree (param $d i32)
    (if (i32.lt_u (local.get $d) (i32.const 64))
      (then
        (call $tree (i32.add (local.get $d) (i32.const 1)))
        (call $tree (i32.add (local.get $d) (i32.const 1))))
      (else (call $down (i32.const 20000)))))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (call $tree (i32.const 0))
    (i64.const 0)))
