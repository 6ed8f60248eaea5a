;; call-tree: gate_evaluate starts an exponential call tree (2^64 calls) with
;; no loop anywhere, so a check at loop headers alone never stops it.
;; Expected: plugin_timeout (the check at every function entry stops it).
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func $tree (param $d i32)
    (if (i32.lt_u (local.get $d) (i32.const 64))
      (then
        (call $tree (i32.add (local.get $d) (i32.const 1)))
        (call $tree (i32.add (local.get $d) (i32.const 1))))))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (call $tree (i32.const 0))
    (i64.const 0))
)
