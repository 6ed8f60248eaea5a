;; Runaway shapes the rewritten module must stop once the interrupt word is
;; set (rewrite_test.go, TestInterruptStops). $progress is set before the
;; runaway part starts, so a test can wait for it instead of for time.
(module
  (import "host" "tick" (func $tick))
  (import "host" "interrupt" (func $interrupt))
  (memory (export "memory") 4096) ;; 256 MiB
  (global $progress (export "progress") (mut i32) (i32.const 0))
  (global $sink (mut i32) (i32.const 0))
  (global $tails (export "tails") (mut i32) (i32.const 0))

  (func (export "tight")
    (local $i i32)
    (global.set $progress (i32.const 1))
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))

  (func $leaf (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
  (func (export "loop_calls")
    (local $i i32)
    (global.set $progress (i32.const 1))
    (loop $l
      (local.set $i (call $leaf (local.get $i)))
      (br $l)))

  ;; a call tree 10,000 deep and 2^10000 calls wide: no loop anywhere
  (func $rec (param $d i32)
    (if (local.get $d)
      (then
        (call $rec (i32.sub (local.get $d) (i32.const 1)))
        (call $rec (i32.sub (local.get $d) (i32.const 1))))))
  (func (export "deep_recursion")
    (global.set $progress (i32.const 1))
    (call $rec (i32.const 10000)))

  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                     (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "fib")
    (global.set $progress (i32.const 1))
    (global.set $sink (call $fib (i32.const 90))))

  ;; 1 GiB per iteration over a 256 MiB memory
  (func (export "fill_forever")
    (global.set $progress (i32.const 1))
    (loop $l
      (memory.fill (i32.const 0) (i32.const 0x5a) (i32.const 0x10000000))
      (memory.fill (i32.const 0) (i32.const 0xa5) (i32.const 0x10000000))
      (memory.fill (i32.const 0) (i32.const 0x5a) (i32.const 0x10000000))
      (memory.fill (i32.const 0) (i32.const 0xa5) (i32.const 0x10000000))
      (br $l)))
  (func (export "copy_forever")
    (global.set $progress (i32.const 1))
    (loop $l
      (memory.copy (i32.const 1) (i32.const 0) (i32.const 0x0fffffff))
      (memory.copy (i32.const 0) (i32.const 1) (i32.const 0x0fffffff))
      (memory.copy (i32.const 1) (i32.const 0) (i32.const 0x0fffffff))
      (memory.copy (i32.const 0) (i32.const 1) (i32.const 0x0fffffff))
      (br $l)))

  ;; the host's tick sets the interrupt word on its Nth call
  (func (export "host_loop")
    (loop $l
      (call $tick)
      (br $l)))

  ;; the interrupt word is set before one 256 MiB fill or copy: nothing may
  ;; be written
  (func (export "fill_after_interrupt")
    (call $interrupt)
    (memory.fill (i32.const 0) (i32.const 0xff) (i32.const 0x10000000)))
  ;; and before fills of a constant, small length, as Go's compiler emits
  ;; them: a body of such fills has no loop header, so each must test the
  ;; word itself (left inline, 20,000 1 MiB fills ran 0.5 s unstopped)
  (func (export "small_fills_after_interrupt")
    (call $interrupt)
    (memory.fill (i32.const 0) (i32.const 0xee) (i32.const 16))
    (memory.fill (i32.const 16) (i32.const 0xee) (i32.const 16)))
  ;; recursion 1000 deep, the interrupt set in the deepest frame, then a
  ;; loop-free tail in every frame on the way back: no entry or loop header
  ;; is passed after the interrupt, so the test after each call must stop it
  (func $unwind (param i32)
    (if (local.get 0)
      (then (call $unwind (i32.sub (local.get 0) (i32.const 1))))
      (else (call $interrupt)))
    (global.set $tails (i32.add (global.get $tails) (i32.const 1))))
  (func (export "unwind_after_interrupt")
    (call $unwind (i32.const 1000)))
  (func (export "copy_after_interrupt")
    (i32.store (i32.const 0) (i32.const 0x01020304))
    (call $interrupt)
    (memory.copy (i32.const 4) (i32.const 0) (i32.const 0x0ffffffc))))
