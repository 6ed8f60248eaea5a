;; memory-touch-grow: gate_evaluate grows memory 1 MiB (16 pages) at a time
;; and writes to every new 4 KiB page of it, until memory.grow fails at the stage's
;; limit; then traps. The host's cost is the pages touched, once: growth
;; reserves, it does not copy (internal/engine/memory.go).
;; Expected: plugin_out_of_memory.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (local $old i32) (local $p i32) (local $end i32)
    (loop $grow
      (local.set $old (memory.grow (i32.const 16)))
      (if (i32.ne (local.get $old) (i32.const -1))
        (then
          ;; touch one byte in every 4 KiB of the new MiB
          (local.set $p (i32.shl (local.get $old) (i32.const 16)))
          (local.set $end (i32.add (local.get $p) (i32.const 1048576)))
          (loop $touch
            (i32.store8 (local.get $p) (i32.const 1))
            (local.set $p (i32.add (local.get $p) (i32.const 4096)))
            (br_if $touch (i32.lt_u (local.get $p) (local.get $end))))
          (br $grow))))
    (unreachable))
)
