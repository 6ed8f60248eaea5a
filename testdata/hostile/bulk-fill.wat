;; bulk-fill: grows memory to the stage's cap (256 MiB in the test), then one
;; memory.fill over all of it, then spins. A runtime that checks only at loop
;; headers cannot stop one bulk-memory instruction; the interrupt rewrite
;; replaces it with a loop of 1 MiB chunks, each followed by the check.
;; Expected: plugin_timeout, the fill itself stopped within a chunk.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    ;; grow by halves until the cap refuses: up to the cap whatever it is
    (local $n i32)
    (local.set $n (i32.const 32768))
    (block $done
      (loop $grow
        (br_if $done (i32.eqz (local.get $n)))
        (if (i32.eq (memory.grow (local.get $n)) (i32.const -1))
          (then (local.set $n (i32.shr_u (local.get $n) (i32.const 1)))))
        (br $grow)))
    (memory.fill (i32.const 0) (i32.const 0x5b) (i32.shl (memory.size) (i32.const 16)))
    (loop $spin (br $spin))
    (i64.const 0))
)
