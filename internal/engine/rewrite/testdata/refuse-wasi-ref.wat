;; A guarded WASI import in a table: call_indirect would reach it without
;; its guard, so the rewrite refuses the module.
(module
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (memory 1)
  (table 1 funcref)
  (elem (i32.const 0) $random_get))
