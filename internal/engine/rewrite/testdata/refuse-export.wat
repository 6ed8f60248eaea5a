;; A module that already exports the interrupt word's name: refused
;; (rewrite_test.go, TestRefusals).
(module
  (global (export "gatehost_interrupt") (mut i32) (i32.const 0)))
