;; forgets-config: a test gate for gatehost plugin check. It declares
;; config_cache and a config_schema, then accepts every request, including
;; one that names by config_digest a config it was never sent: the kit must
;; report that (abi/SPEC.md §5.3, §12).
(module
  (memory (export "memory") 1)
  ;; Descriptor: 142 bytes at offset 256.
  (data (i32.const 256) "{\"abi_version\":1,\"name\":\"forgets-config\",\"version\":\"1.0.0\",\"subject_kinds\":[\"proposal\"],\"config_schema\":{\"type\":\"object\"},\"config_cache\":true}")
  ;; Response: 76 bytes at offset 1024.
  (data (i32.const 1024) "{\"verdict\":\"accepted\",\"basis\":\"waived\",\"evidence\":{\"gate\":\"forgets-config\"}}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 256 << 32 | 142
  (func (export "gate_describe") (result i64) (i64.const 1099511627918))
  (func (export "gate_alloc") (param $size i32) (result i32)
    (local $need i32)
    (if (i32.gt_u (local.get $size) (i32.const 0x40000000))
      (then (return (i32.const 0))))
    (local.set $need
      (i32.add (i32.const 1)
        (i32.shr_u (i32.add (local.get $size) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))
  ;; 1024 << 32 | 76
  (func (export "gate_evaluate") (param $ptr i32) (param $len i32) (result i64)
    (i64.const 4398046511180)))
