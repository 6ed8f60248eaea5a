;; Programs whose results must not change under the rewrite while the
;; interrupt word stays 0 (rewrite_test.go, TestBehaviourUnchanged).
(module
  (type $bin (func (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table 3 funcref)
  (elem (i32.const 0) $add $sub $mul)
  (func $add (type $bin) (i32.add (local.get 0) (local.get 1)))
  (func $sub (type $bin) (i32.sub (local.get 0) (local.get 1)))
  (func $mul (type $bin) (i32.mul (local.get 0) (local.get 1)))

  ;; sum of 0..n-1 in a loop
  (func (export "sum") (param $n i64) (result i64)
    (local $i i64) (local $s i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $s (i64.add (local.get $s) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $s))

  ;; a loop with a parameter and a result (block type by type index)
  (func (export "countdown") (param $n i32) (result i32)
    (local.get $n)
    (loop $l (param i32) (result i32)
      (i32.sub (i32.const 1))
      (local.tee $n)
      (br_if $l (i32.gt_s (local.get $n) (i32.const 0))))
    (drop)
    (local.get $n))

  ;; nested loops
  (func (export "nested") (param $n i32) (result i32)
    (local $i i32) (local $j i32) (local $c i32)
    (loop $outer
      (local.set $j (i32.const 0))
      (loop $inner
        (local.set $c (i32.add (local.get $c) (i32.xor (local.get $i) (local.get $j))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br_if $inner (i32.lt_u (local.get $j) (local.get $n))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $outer (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $c))

  ;; recursion
  (func $fact (export "fact") (param $n i64) (result i64)
    (if (result i64) (i64.le_u (local.get $n) (i64.const 1))
      (then (i64.const 1))
      (else (i64.mul (local.get $n) (call $fact (i64.sub (local.get $n) (i64.const 1)))))))
  (func $fib (export "fib") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                     (call $fib (i32.sub (local.get $n) (i32.const 2)))))))

  (func (export "switch") (param $i i32) (result i32)
    (block $d (block $c (block $b (block $a
      (br_table $a $b $c $d (local.get $i)))
      (return (i32.const 10)))
      (return (i32.const 20)))
      (return (i32.const 30)))
    (i32.const 40))

  (func (export "dispatch") (param $f i32) (param $x i32) (param $y i32) (result i32)
    (call_indirect (type $bin) (local.get $x) (local.get $y) (local.get $f)))

  ;; memory filled with a pattern, so copies are visible
  (func (export "init")
    (local $i i32)
    (loop $l
      (i32.store8 (local.get $i) (i32.mul (local.get $i) (i32.const 7)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 65536)))))
  (func (export "copy") (param i32 i32 i32)
    (memory.copy (local.get 0) (local.get 1) (local.get 2)))
  (func (export "fill") (param i32 i32 i32)
    (memory.fill (local.get 0) (local.get 1) (local.get 2)))
  ;; both in one body, with a value left on the stack under them
  ;; A length the i32.const right before gives, as Go's compiler emits for
  ;; values of a known size: inline when it is at most one chunk.
  (func (export "copy16") (param i32 i32)
    (memory.copy (local.get 0) (local.get 1) (i32.const 16)))
  (func (export "fill16") (param i32 i32)
    (memory.fill (local.get 0) (local.get 1) (i32.const 16)))
  (func (export "copyfill") (param i32 i32 i32) (result i32)
    (i32.const 99)
    (memory.copy (local.get 0) (local.get 1) (local.get 2))
    (memory.fill (local.get 1) (i32.const 0xab) (local.get 2)))
  (func (export "grow") (param i32) (result i32)
    (drop (memory.grow (local.get 0)))
    (memory.size))

  (func (export "signext") (param i32) (result i64)
    (i64.extend8_s (i64.extend_i32_u (i32.extend16_s (local.get 0)))))
  (func (export "satconv") (param f64) (result i32)
    (i32.trunc_sat_f64_s (local.get 0)))
  (func (export "refs") (result i32)
    (i32.add (ref.is_null (ref.null extern))
             (ref.is_null (table.get 0 (i32.const 1)))))
  (func (export "typedselect") (param i32) (result i64)
    (select (result i64) (i64.const 5) (i64.const 6) (local.get 0)))

  ;; SIMD: dot product of lanes, with a shuffle, lane ops and v128 memory
  (func (export "simd") (param $a i32) (result i32)
    (local $v v128)
    (local.set $v (i32x4.add (v128.const i32x4 1 2 3 4) (i32x4.splat (local.get $a))))
    (v128.store offset=16 (i32.const 0) (local.get $v))
    (local.set $v (v128.load offset=16 (i32.const 0)))
    (local.set $v (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $v) (local.get $v)))
    (local.set $v (v128.load32_lane 1 (i32.const 16) (local.get $v)))
    (i32.add (i32x4.extract_lane 0 (local.get $v))
      (i32.add (i32x4.extract_lane 1 (local.get $v))
        (i32.add (i32x4.extract_lane 2 (local.get $v))
          (i32x4.extract_lane 3 (i32x4.mul (local.get $v) (local.get $v))))))))
