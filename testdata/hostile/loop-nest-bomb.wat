;; loop-nest-bomb: gate_evaluate nests 101 loops, one more than
;; compile_limits.loop_nesting allows (100): compile time grows with about
;; the cube of loop nesting (10,000 nested loops compiled for 10 s, 200,000
;; for over 20 minutes), so the module is refused before it is compiled.
;; Expected: load_error (ErrTooComplex, compile_limits.loop_nesting).
(module
  (memory (export "memory") 1)
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 0))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop (loop )))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))
    (i64.const 0))
)
