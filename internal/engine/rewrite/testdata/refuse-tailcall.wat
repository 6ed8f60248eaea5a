;; A tail call (0x12): refused (rewrite_test.go, TestRefusals).
(module
  (func $f (result i32) (return_call $g))
  (func $g (result i32) (i32.const 1)))
