;; huge-alloc: gate_alloc asks for 4 GiB of memory whatever the request's
;; size; the grow fails and it returns 0.
;; Expected: abi_violation (gate_alloc returned 0).
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32)
    (if (i32.eq (memory.grow (i32.const 65535)) (i32.const -1))
      (then (return (i32.const 0))))
    (i32.const 65536))
  (func (export "gate_evaluate") (param i32 i32) (result i64) (unreachable))
)
