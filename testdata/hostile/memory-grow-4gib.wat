;; memory-grow-4gib: gate_evaluate grows memory 16384 pages (1 GiB) at a time
;; until memory.grow fails, then traps; run with a 4 GiB limit, memory ends
;; at 65536 pages, whose byte size (2^32) a uint32 cannot hold. Nothing is
;; touched, so the host pays address space, not memory.
;; Expected: plugin_out_of_memory (not plugin_trap).
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (drop (memory.grow (i32.const 16383)))
    (loop $grow
      (br_if $grow (i32.ne (memory.grow (i32.const 16384)) (i32.const -1))))
    (unreachable))
)
