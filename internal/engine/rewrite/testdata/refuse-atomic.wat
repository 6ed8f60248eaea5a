;; A threads opcode (0xfe prefix): refused (rewrite_test.go, TestRefusals).
(module
  (memory 1 1)
  (func (export "f") (result i32)
    (i32.atomic.load (i32.const 0))))
