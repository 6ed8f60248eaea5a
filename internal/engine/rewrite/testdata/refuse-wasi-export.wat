;; A guarded WASI import exported again: a caller of the export would reach
;; it without its guard, so the rewrite refuses the module.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory 1)
  (export "poll" (func $poll)))
