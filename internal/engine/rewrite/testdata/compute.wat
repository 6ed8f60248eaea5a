;; Compute-heavy guests for BenchmarkCheckCost: a tight loop (a check per
;; iteration), a call tree without loops (a check per call) and a loop of
;; small copies, as Go's memmove makes them (a rewritten bulk instruction
;; each).
(module
  (memory 1)
  (func (export "sum") (param $n i64) (result i64)
    (local $i i64) (local $s i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $s (i64.add (local.get $s) (i64.mul (local.get $i) (local.get $i))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $s))
  (func $fib (export "fib") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                     (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "small_copies") (param $n i32)
    (loop $next
      (memory.copy (i32.const 64) (i32.const 0) (i32.const 24))
      (memory.fill (i32.const 128) (i32.const 0) (i32.const 16))
      (br_if $next (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))))
