;; wasi-files-env: tries to open "/etc/passwd" through the first preopened
;; directory (fd 3) and to read the environment. It accepts only if either
;; succeeds, which would be a sandbox escape; otherwise it traps.
;; Expected: plugin_trap (path_open fails with EBADF, the environment is empty).
(module
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"hostile\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"]}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 81: the descriptor above
  (func (export "gate_describe") (result i64) (i64.const 68719476817))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 1024) "etc/passwd")
  (data (i32.const 2048) "{\"verdict\":\"accepted\",\"basis\":\"waived\",\"evidence\":{\"escaped\":true}}")
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    ;; environ_sizes_get(count at 512, size at 516): any variable is an escape.
    (drop (call $environ_sizes_get (i32.const 512) (i32.const 516)))
    (if (i32.ne (i32.load (i32.const 512)) (i32.const 0))
      (then (return (i64.const 8796093022275))))
    ;; path_open(fd 3, flags 0, "etc/passwd", oflags 0, rights read, 0, fdflags 0, fd at 520)
    (if (i32.eqz (call $path_open (i32.const 3) (i32.const 0) (i32.const 1024) (i32.const 10)
                   (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 520)))
      (then (return (i64.const 8796093022275))))
    (unreachable))
)
