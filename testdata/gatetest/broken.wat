;; broken: a deliberately non-conforming gate, for the conformance kit's own
;; tests. It loads (its shape and descriptor are valid) and then breaks
;; nearly every rule of abi/SPEC.md:
;;   - declares a capability no host knows ("telepathy");
;;   - calls catalog.get, a capability it does not declare, on every request;
;;   - traps (unreachable) on a request shorter than 8 bytes or not starting with '{';
;;   - loops forever on a request over 64 KiB (time budget);
;;   - answers a tool_call "accepted" without evidence (abi_violation);
;;   - answers proposals alternately rejected and inconclusive (not deterministic),
;;     whatever the request, malformed ones included.
(module
  (import "gatehost_v1" "call" (func $call (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  (global $n (mut i32) (i32.const 0))
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"broken\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\",\"tool_call\"],\"capabilities\":[\"telepathy\"]}\00")
  (data (i32.const 512) "catalog.get\00")
  (data (i32.const 528) "{\"name\":\"x\"}\00")
  (data (i32.const 544) "\"tool_call\"\00")
  (data (i32.const 576) "{\"verdict\":\"accepted\"}\00")
  (data (i32.const 640) "{\"verdict\":\"rejected\",\"findings\":[{\"code\":\"flip\",\"severity\":\"blocking\",\"message\":\"odd request\"}]}\00")
  (data (i32.const 768) "{\"verdict\":\"inconclusive\",\"reason\":\"even_request\"}\00")

  (func $strlen (param $z i32) (result i32)
    (local $p i32)
    (local.set $p (local.get $z))
    (block $done (loop $next
      (br_if $done (i32.eqz (i32.load8_u (local.get $p))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $next)))
    (i32.sub (local.get $p) (local.get $z)))

  (func $answer (param $z i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $z)) (i64.const 32))
            (i64.extend_i32_u (call $strlen (local.get $z)))))

  ;; contains: does [p, p+n) contain the NUL-terminated z?
  (func $contains (param $p i32) (param $n i32) (param $z i32) (result i32)
    (local $i i32) (local $j i32) (local $zl i32)
    (local.set $zl (call $strlen (local.get $z)))
    (block $done (loop $outer
      (br_if $done (i32.gt_u (i32.add (local.get $i) (local.get $zl)) (local.get $n)))
      (local.set $j (i32.const 0))
      (block $miss (loop $inner
        (if (i32.ge_u (local.get $j) (local.get $zl)) (then (return (i32.const 1))))
        (br_if $miss (i32.ne (i32.load8_u (i32.add (i32.add (local.get $p) (local.get $i)) (local.get $j)))
                             (i32.load8_u (i32.add (local.get $z) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $inner)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $outer)))
    (i32.const 0))

  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (call $answer (i32.const 16)))

  (func (export "gate_alloc") (param $size i32) (result i32)
    (local $need i32)
    (local.set $need (i32.add (i32.const 1) (i32.shr_u (i32.add (local.get $size) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))

  (func (export "gate_evaluate") (param $ptr i32) (param $len i32) (result i64)
    (drop (call $call (i32.const 512) (i32.const 11) (i32.const 528) (i32.const 12)))
    (if (i32.lt_u (local.get $len) (i32.const 8)) (then unreachable))
    (if (i32.ne (i32.load8_u (local.get $ptr)) (i32.const 123)) (then unreachable))
    (if (i32.gt_u (local.get $len) (i32.const 65536)) (then (loop $forever (br $forever))))
    (if (call $contains (local.get $ptr) (local.get $len) (i32.const 544))
      (then (return (call $answer (i32.const 576)))))
    (global.set $n (i32.add (global.get $n) (i32.const 1)))
    (if (result i64) (i32.and (global.get $n) (i32.const 1))
      (then (call $answer (i32.const 640)))
      (else (call $answer (i32.const 768))))))
