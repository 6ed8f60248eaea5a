;; effect-guard-wat: a gatehost ABI v1 gate written by hand in WebAssembly
;; text, against abi/SPEC.md alone (no SDK, no WASI, no runtime).
;;
;; It rejects every tool call whose tool the catalog classes as
;; non_idempotent (or does not know: an unknown effect counts as
;; non_idempotent, the catalog's default) unless the stage config's "allow"
;; list names the tool, by canonical id or by the name the agent used. It
;; checks a whole proposal (one finding per offending action) or one
;; tool_call, and needs the catalog capability (catalog.get, SPEC §7.7).
;;
;; Memory layout (64 KiB pages):
;;   [0, 4096)              constant strings, NUL-terminated
;;   [65536, 65536+1 MiB)   the response being built (OUT); the response cap is 1 MiB
;;   [1114112, ...)         the request (gate_alloc), then capability call
;;                          buffers, bump-allocated and reset on each gate_alloc
;;
;; JSON is scanned, not decoded: strings are compared as raw JSON tokens
;; (quotes included). The subject keeps the agent's escapes while config and
;; catalog answers are re-encoded (SPEC §5.1), so one name may be spelt two
;; ways; a mismatch only ever withholds an allow-list match: it fails closed.
(module
  (import "gatehost_v1" "call" (func $call (param i32 i32 i32 i32) (result i32)))
  (import "gatehost_v1" "result" (func $result (param i32 i32) (result i32)))

  (memory (export "memory") 18)

  (global $OUT i32 (i32.const 65536))
  (global $OUT_END i32 (i32.const 1114112))
  (global $REQ_BASE i32 (i32.const 1114112))
  (global $heap (mut i32) (i32.const 1114112))
  (global $ocur (mut i32) (i32.const 0))   ;; response cursor
  (global $oflow (mut i32) (i32.const 0))  ;; the response did not fit
  (global $nfind (mut i32) (i32.const 0))  ;; findings written
  (global $fatal (mut i32) (i32.const 0))  ;; 0, or the constant inconclusive answer to give
  (global $allow (mut i32) (i32.const -1)) ;; position of config.allow ('['), or -1
  (global $depth (mut i32) (i32.const 0))  ;; nesting depth while skipping values

  ;; The descriptor (gate_describe measures it).
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"effect-guard-wat\",\"version\":\"1.0.0\",\"description\":\"Rejects tools whose effect class is non_idempotent unless the stage config allows them.\",\"subject_kinds\":[\"proposal\",\"tool_call\"],\"capabilities\":[\"catalog\"],\"config_schema\":{\"type\":\"object\",\"properties\":{\"allow\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":true}},\"additionalProperties\":false}}\00")
  ;; Member names, and raw tokens compared against.
  (data (i32.const 1024) "abi_version\00")
  (data (i32.const 1040) "subject_kind\00")
  (data (i32.const 1056) "subject\00")
  (data (i32.const 1072) "config\00")
  (data (i32.const 1088) "allow\00")
  (data (i32.const 1104) "actions\00")
  (data (i32.const 1120) "tool\00")
  (data (i32.const 1136) "result\00")
  (data (i32.const 1152) "error\00")
  (data (i32.const 1168) "found\00")
  (data (i32.const 1184) "effect\00")
  (data (i32.const 1200) "id\00")
  (data (i32.const 1216) "\"proposal\"\00")
  (data (i32.const 1232) "\"tool_call\"\00")
  (data (i32.const 1248) "\"non_idempotent\"\00")
  (data (i32.const 1280) "catalog.get\00")
  (data (i32.const 1296) "{\"name\":\00")
  ;; Whole answers.
  (data (i32.const 1536) "{\"verdict\":\"inconclusive\",\"reason\":\"bad_request\"}\00")
  (data (i32.const 1600) "{\"verdict\":\"inconclusive\",\"reason\":\"unsupported_abi\"}\00")
  (data (i32.const 1664) "{\"verdict\":\"inconclusive\",\"reason\":\"unsupported_subject\"}\00")
  (data (i32.const 1728) "{\"verdict\":\"inconclusive\",\"reason\":\"catalog_unavailable\"}\00")
  (data (i32.const 1792) "{\"verdict\":\"inconclusive\",\"reason\":\"out_of_memory\"}\00")
  (data (i32.const 1856) "{\"verdict\":\"inconclusive\",\"reason\":\"response_too_large\"}\00")
  ;; Pieces of built answers.
  (data (i32.const 1920) "{\"verdict\":\"rejected\",\"findings\":[\00")
  (data (i32.const 2048) "],\"evidence\":{\"tools_checked\":\00")
  (data (i32.const 2112) "{\"verdict\":\"accepted\",\"basis\":\"verified\",\"evidence\":{\"tools_checked\":\00")
  (data (i32.const 2240) "}}\00")
  (data (i32.const 2304) "{\"code\":\"\00")
  (data (i32.const 2320) "\",\"severity\":\"blocking\",\"tier\":\"decision_procedure\",\"message\":\"\00")
  (data (i32.const 2400) "the tool's effect class is non_idempotent and the stage config does not allow it\00")
  (data (i32.const 2496) "the catalog does not know the tool, so its effect class is taken as non_idempotent\00")
  (data (i32.const 2592) "non_idempotent_tool\00")
  (data (i32.const 2624) "unknown_tool\00")
  (data (i32.const 2640) "\",\"details\":{\"tool\":\00")
  (data (i32.const 2672) ",\"action_index\":\00")

  ;; ---- helpers -----------------------------------------------------------

  (func $strlen (param $z i32) (result i32)
    (local $p i32)
    (local.set $p (local.get $z))
    (block $done (loop $next
      (br_if $done (i32.eqz (i32.load8_u (local.get $p))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $next)))
    (i32.sub (local.get $p) (local.get $z)))

  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
            (i64.extend_i32_u (local.get $len))))

  ;; answer returns the packed location of a NUL-terminated constant answer.
  (func $answer (param $z i32) (result i64)
    (call $pack (local.get $z) (call $strlen (local.get $z))))

  ;; alloc bumps $heap by n bytes (8-aligned), growing memory; 0 on failure.
  (func $alloc (param $n i32) (result i32)
    (local $p i32) (local $end i32) (local $need i32)
    (local.set $p (global.get $heap))
    (if (i32.gt_u (local.get $n) (i32.const 0x10000000)) (then (return (i32.const 0))))
    (local.set $end (i32.and (i32.add (i32.add (local.get $p) (local.get $n)) (i32.const 7)) (i32.const -8)))
    ;; pages needed to hold [0, end)
    (local.set $need (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $heap (local.get $end))
    (local.get $p))

  ;; put appends [p, p+n) to the response, or marks it overflowed.
  (func $put (param $p i32) (param $n i32)
    (if (i32.gt_u (i32.add (global.get $ocur) (local.get $n)) (global.get $OUT_END))
      (then (global.set $oflow (i32.const 1)) (return)))
    (memory.copy (global.get $ocur) (local.get $p) (local.get $n))
    (global.set $ocur (i32.add (global.get $ocur) (local.get $n))))

  (func $putz (param $z i32)
    (call $put (local.get $z) (call $strlen (local.get $z))))

  (func $putc (param $c i32)
    (if (i32.ge_u (global.get $ocur) (global.get $OUT_END))
      (then (global.set $oflow (i32.const 1)) (return)))
    (i32.store8 (global.get $ocur) (local.get $c))
    (global.set $ocur (i32.add (global.get $ocur) (i32.const 1))))

  ;; putint appends a non-negative integer in decimal.
  (func $putint (param $n i32)
    (if (i32.ge_u (local.get $n) (i32.const 10))
      (then (call $putint (i32.div_u (local.get $n) (i32.const 10)))))
    (call $putc (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10)))))

  (func $byte (param $p i32) (param $end i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $p) (local.get $end))
      (then (i32.load8_u (local.get $p)))
      (else (i32.const -1))))

  ;; ws skips JSON whitespace.
  (func $ws (param $p i32) (param $end i32) (result i32)
    (local $c i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $c (i32.load8_u (local.get $p)))
      (br_if $done (i32.and (i32.and (i32.ne (local.get $c) (i32.const 32)) (i32.ne (local.get $c) (i32.const 9)))
                            (i32.and (i32.ne (local.get $c) (i32.const 10)) (i32.ne (local.get $c) (i32.const 13)))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $next)))
    (local.get $p))

  ;; skipstr: p at '"'; returns the position after the closing quote, or -1.
  (func $skipstr (param $p i32) (param $end i32) (result i32)
    (local $c i32)
    (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 34)) (then (return (i32.const -1))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (loop $next
      (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (i32.const -1))))
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 34)) (then (return (i32.add (local.get $p) (i32.const 1)))))
      (if (i32.eq (local.get $c) (i32.const 92))
        (then (local.set $p (i32.add (local.get $p) (i32.const 2))))
        (else (local.set $p (i32.add (local.get $p) (i32.const 1)))))
      (br $next))
    (i32.const -1))

  ;; skip returns the position after the JSON value at p (after whitespace),
  ;; or -1 when it is not one. Nesting deeper than 512 is refused, so a
  ;; hostile request cannot exhaust the stack.
  (func $skip (param $p i32) (param $end i32) (result i32)
    (local $c i32) (local $q i32)
    (local.set $p (call $ws (local.get $p) (local.get $end)))
    (local.set $c (call $byte (local.get $p) (local.get $end)))
    (if (i32.eq (local.get $c) (i32.const -1)) (then (return (i32.const -1))))
    (if (i32.eq (local.get $c) (i32.const 34)) (then (return (call $skipstr (local.get $p) (local.get $end)))))
    (if (i32.or (i32.eq (local.get $c) (i32.const 123)) (i32.eq (local.get $c) (i32.const 91)))
      (then
        (if (i32.ge_u (global.get $depth) (i32.const 512)) (then (return (i32.const -1))))
        (global.set $depth (i32.add (global.get $depth) (i32.const 1)))
        (local.set $q (call $skipseq (local.get $p) (local.get $end) (local.get $c)))
        (global.set $depth (i32.sub (global.get $depth) (i32.const 1)))
        (return (local.get $q))))
    ;; a number or literal: up to a delimiter
    (local.set $q (local.get $p))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $c (i32.load8_u (local.get $p)))
      (br_if $done (i32.or (i32.or (i32.or (i32.eq (local.get $c) (i32.const 44)) (i32.eq (local.get $c) (i32.const 125)))
                                   (i32.or (i32.eq (local.get $c) (i32.const 93)) (i32.eq (local.get $c) (i32.const 58))))
                           (i32.or (i32.or (i32.eq (local.get $c) (i32.const 32)) (i32.eq (local.get $c) (i32.const 10)))
                                   (i32.or (i32.eq (local.get $c) (i32.const 13)) (i32.eq (local.get $c) (i32.const 9))))))
      (br_if $done (i32.or (i32.eq (local.get $c) (i32.const 123)) (i32.or (i32.eq (local.get $c) (i32.const 91)) (i32.eq (local.get $c) (i32.const 34)))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $next)))
    (if (result i32) (i32.eq (local.get $p) (local.get $q)) (then (i32.const -1)) (else (local.get $p))))

  ;; skipseq skips an object ('{') or array ('[') at p.
  (func $skipseq (param $p i32) (param $end i32) (param $open i32) (result i32)
    (local $close i32) (local $b i32)
    (local.set $close (i32.add (local.get $open) (i32.const 2))) ;; '{'+2 = '}', '['+2 = ']'
    (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
    (if (i32.eq (call $byte (local.get $p) (local.get $end)) (local.get $close))
      (then (return (i32.add (local.get $p) (i32.const 1)))))
    (loop $next
      (if (i32.eq (local.get $open) (i32.const 123))
        (then
          (local.set $p (call $skipstr (local.get $p) (local.get $end)))
          (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
          (local.set $p (call $ws (local.get $p) (local.get $end)))
          (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 58)) (then (return (i32.const -1))))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))))
      (local.set $p (call $skip (local.get $p) (local.get $end)))
      (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
      (local.set $p (call $ws (local.get $p) (local.get $end)))
      (local.set $b (call $byte (local.get $p) (local.get $end)))
      (if (i32.eq (local.get $b) (local.get $close)) (then (return (i32.add (local.get $p) (i32.const 1)))))
      (if (i32.ne (local.get $b) (i32.const 44)) (then (return (i32.const -1))))
      (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
      (br $next))
    (i32.const -1))

  ;; eqz: are the n bytes at p the NUL-terminated string z?
  (func $eqz (param $p i32) (param $n i32) (param $z i32) (result i32)
    (local $i i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (if (i32.ne (i32.load8_u (i32.add (local.get $p) (local.get $i))) (i32.load8_u (i32.add (local.get $z) (local.get $i))))
        (then (return (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (i32.eqz (i32.load8_u (i32.add (local.get $z) (local.get $n)))))

  (func $eqtok (param $a i32) (param $an i32) (param $b i32) (param $bn i32) (result i32)
    (local $i i32)
    (if (i32.ne (local.get $an) (local.get $bn)) (then (return (i32.const 0))))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $an)))
      (if (i32.ne (i32.load8_u (i32.add (local.get $a) (local.get $i))) (i32.load8_u (i32.add (local.get $b) (local.get $i))))
        (then (return (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (i32.const 1))

  ;; member returns the position of the value of member keyz of the object
  ;; at obj, or -1 when obj is not an object or has no such member.
  (func $member (param $obj i32) (param $end i32) (param $keyz i32) (result i32)
    (local $p i32) (local $ks i32) (local $q i32) (local $v i32)
    (local.set $p (call $ws (local.get $obj) (local.get $end)))
    (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 123)) (then (return (i32.const -1))))
    (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
    (loop $next
      (local.set $ks (i32.add (local.get $p) (i32.const 1)))
      (local.set $q (call $skipstr (local.get $p) (local.get $end)))
      (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (i32.const -1))))
      (local.set $p (call $ws (local.get $q) (local.get $end)))
      (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 58)) (then (return (i32.const -1))))
      (local.set $v (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
      (if (call $eqz (local.get $ks) (i32.sub (i32.sub (local.get $q) (i32.const 1)) (local.get $ks)) (local.get $keyz))
        (then (return (local.get $v))))
      (local.set $p (call $skip (local.get $v) (local.get $end)))
      (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
      (local.set $p (call $ws (local.get $p) (local.get $end)))
      (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 44)) (then (return (i32.const -1))))
      (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
      (br $next))
    (i32.const -1))

  ;; ---- the gate ------------------------------------------------------------

  (func $finding (param $codez i32) (param $msgz i32) (param $tok i32) (param $tn i32) (param $index i32)
    (if (global.get $nfind) (then (call $putc (i32.const 44))))
    (call $putz (i32.const 2304))
    (call $putz (local.get $codez))
    (call $putz (i32.const 2320))
    (call $putz (local.get $msgz))
    (call $putz (i32.const 2640))
    (call $put (local.get $tok) (local.get $tn))
    (call $putc (i32.const 125))
    (if (i32.ge_s (local.get $index) (i32.const 0))
      (then (call $putz (i32.const 2672)) (call $putint (local.get $index))))
    (call $putc (i32.const 125))
    (global.set $nfind (i32.add (global.get $nfind) (i32.const 1))))

  ;; allowed: does config.allow name the token [a, a+an)?
  (func $allowed (param $a i32) (param $an i32) (param $end i32) (result i32)
    (local $p i32) (local $q i32)
    (if (i32.lt_s (global.get $allow) (i32.const 0)) (then (return (i32.const 0))))
    (local.set $p (call $ws (i32.add (global.get $allow) (i32.const 1)) (local.get $end)))
    (loop $next
      (local.set $q (call $skipstr (local.get $p) (local.get $end)))
      (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (i32.const 0))))
      (if (call $eqtok (local.get $p) (i32.sub (local.get $q) (local.get $p)) (local.get $a) (local.get $an))
        (then (return (i32.const 1))))
      (local.set $p (call $ws (local.get $q) (local.get $end)))
      (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 44)) (then (return (i32.const 0))))
      (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
      (br $next))
    (i32.const 0))

  ;; check looks the tool token [tok, tok+tn) up with catalog.get and writes
  ;; a finding when it must not run. reqEnd bounds the request (for allow).
  (func $check (param $tok i32) (param $tn i32) (param $index i32) (param $reqEnd i32)
    (local $buf i32) (local $n i32) (local $ans i32) (local $aend i32)
    (local $res i32) (local $f i32) (local $t i32) (local $eff i32) (local $id i32) (local $q i32)
    ;; request {"name":<token>}
    (local.set $n (i32.add (local.get $tn) (i32.const 9)))
    (local.set $buf (call $alloc (local.get $n)))
    (if (i32.eqz (local.get $buf)) (then (global.set $fatal (i32.const 1792)) (return)))
    (memory.copy (local.get $buf) (i32.const 1296) (i32.const 8))
    (memory.copy (i32.add (local.get $buf) (i32.const 8)) (local.get $tok) (local.get $tn))
    (i32.store8 (i32.add (local.get $buf) (i32.sub (local.get $n) (i32.const 1))) (i32.const 125))
    (local.set $n (call $call (i32.const 1280) (i32.const 11) (local.get $buf) (local.get $n)))
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then (global.set $fatal (i32.const 1728)) (return)))
    (local.set $ans (call $alloc (local.get $n)))
    (if (i32.eqz (local.get $ans)) (then (global.set $fatal (i32.const 1792)) (return)))
    (if (i32.ne (call $result (local.get $ans) (local.get $n)) (local.get $n))
      (then (global.set $fatal (i32.const 1728)) (return)))
    (local.set $aend (i32.add (local.get $ans) (local.get $n)))
    ;; {"error":…} (capability_denied above all) or neither member: unavailable
    (if (i32.ge_s (call $member (local.get $ans) (local.get $aend) (i32.const 1152)) (i32.const 0))
      (then (global.set $fatal (i32.const 1728)) (return)))
    (local.set $res (call $member (local.get $ans) (local.get $aend) (i32.const 1136)))
    (if (i32.lt_s (local.get $res) (i32.const 0)) (then (global.set $fatal (i32.const 1728)) (return)))
    (local.set $f (call $member (local.get $res) (local.get $aend) (i32.const 1168)))
    (if (i32.ne (call $byte (local.get $f) (local.get $aend)) (i32.const 116)) ;; not "true"
      (then
        (if (i32.eqz (call $allowed (local.get $tok) (local.get $tn) (local.get $reqEnd)))
          (then (call $finding (i32.const 2624) (i32.const 2496) (local.get $tok) (local.get $tn) (local.get $index))))
        (return)))
    (local.set $t (call $member (local.get $res) (local.get $aend) (i32.const 1120)))
    (if (i32.lt_s (local.get $t) (i32.const 0)) (then (global.set $fatal (i32.const 1728)) (return)))
    ;; an absent effect is the catalog's default, non_idempotent
    (local.set $eff (call $member (local.get $t) (local.get $aend) (i32.const 1184)))
    (if (i32.ge_s (local.get $eff) (i32.const 0))
      (then
        (local.set $q (call $skipstr (local.get $eff) (local.get $aend)))
        (if (i32.lt_s (local.get $q) (i32.const 0)) (then (global.set $fatal (i32.const 1728)) (return)))
        (if (i32.eqz (call $eqz (local.get $eff) (i32.sub (local.get $q) (local.get $eff)) (i32.const 1248)))
          (then (return)))))
    (if (call $allowed (local.get $tok) (local.get $tn) (local.get $reqEnd)) (then (return)))
    (local.set $id (call $member (local.get $t) (local.get $aend) (i32.const 1200)))
    (if (i32.ge_s (local.get $id) (i32.const 0))
      (then
        (local.set $q (call $skipstr (local.get $id) (local.get $aend)))
        (if (i32.ge_s (local.get $q) (i32.const 0))
          (then
            (if (call $allowed (local.get $id) (i32.sub (local.get $q) (local.get $id)) (local.get $reqEnd))
              (then (return)))))))
    (call $finding (i32.const 2592) (i32.const 2400) (local.get $tok) (local.get $tn) (local.get $index)))

  (func (export "gate_abi_version") (result i32) (i32.const 1))

  (func (export "gate_describe") (result i64)
    (call $answer (i32.const 16)))

  (func (export "gate_alloc") (param $size i32) (result i32)
    (local $p i32)
    (global.set $heap (global.get $REQ_BASE))
    (local.set $p (call $alloc (local.get $size)))
    (local.get $p))

  (func (export "gate_evaluate") (param $ptr i32) (param $len i32) (result i64)
    (local $end i32) (local $p i32) (local $v i32) (local $k i32) (local $kn i32) (local $s i32)
    (local $c i32) (local $t i32) (local $q i32) (local $i i32) (local $ntools i32) (local $start i32) (local $pl i32)
    (global.set $ocur (i32.add (global.get $OUT) (i32.const 256)))
    (global.set $oflow (i32.const 0))
    (global.set $nfind (i32.const 0))
    (global.set $fatal (i32.const 0))
    (global.set $allow (i32.const -1))
    (global.set $depth (i32.const 0))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    ;; the whole request is one JSON object
    (local.set $p (call $ws (local.get $ptr) (local.get $end)))
    (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 123)) (then (return (call $answer (i32.const 1536)))))
    (local.set $q (call $skip (local.get $p) (local.get $end)))
    (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (call $answer (i32.const 1536)))))
    (if (i32.ne (call $ws (local.get $q) (local.get $end)) (local.get $end)) (then (return (call $answer (i32.const 1536)))))
    ;; abi_version must be exactly 1
    (local.set $v (call $member (local.get $ptr) (local.get $end) (i32.const 1024)))
    (if (i32.lt_s (local.get $v) (i32.const 0)) (then (return (call $answer (i32.const 1536)))))
    (if (i32.or (i32.ne (call $byte (local.get $v) (local.get $end)) (i32.const 49))
                (i32.ne (call $skip (local.get $v) (local.get $end)) (i32.add (local.get $v) (i32.const 1))))
      (then (return (call $answer (i32.const 1600)))))
    (local.set $k (call $member (local.get $ptr) (local.get $end) (i32.const 1040)))
    (local.set $q (call $skipstr (local.get $k) (local.get $end)))
    (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (call $answer (i32.const 1536)))))
    (local.set $kn (i32.sub (local.get $q) (local.get $k)))
    (local.set $s (call $member (local.get $ptr) (local.get $end) (i32.const 1056)))
    (if (i32.ne (call $byte (local.get $s) (local.get $end)) (i32.const 123)) (then (return (call $answer (i32.const 1536)))))
    ;; config.allow, when the stage has one
    (local.set $c (call $member (local.get $ptr) (local.get $end) (i32.const 1072)))
    (if (i32.ge_s (local.get $c) (i32.const 0))
      (then
        (local.set $c (call $member (local.get $c) (local.get $end) (i32.const 1088)))
        (if (i32.eq (call $byte (local.get $c) (local.get $end)) (i32.const 91))
          (then (global.set $allow (local.get $c))))))
    (block $kinds
      (if (call $eqz (local.get $k) (local.get $kn) (i32.const 1232))
        (then
          (local.set $t (call $member (local.get $s) (local.get $end) (i32.const 1120)))
          (local.set $q (call $skipstr (local.get $t) (local.get $end)))
          (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (call $answer (i32.const 1536)))))
          (call $check (local.get $t) (i32.sub (local.get $q) (local.get $t)) (i32.const -1) (local.get $end))
          (local.set $ntools (i32.const 1))
          (br $kinds)))
      (if (call $eqz (local.get $k) (local.get $kn) (i32.const 1216))
        (then
          (local.set $p (call $member (local.get $s) (local.get $end) (i32.const 1104)))
          (if (i32.ne (call $byte (local.get $p) (local.get $end)) (i32.const 91)) (then (return (call $answer (i32.const 1536)))))
          (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
          (br_if $kinds (i32.eq (call $byte (local.get $p) (local.get $end)) (i32.const 93)))
          (loop $action
            (local.set $t (call $member (local.get $p) (local.get $end) (i32.const 1120)))
            (if (i32.eq (call $byte (local.get $t) (local.get $end)) (i32.const 34))
              (then
                (local.set $q (call $skipstr (local.get $t) (local.get $end)))
                (call $check (local.get $t) (i32.sub (local.get $q) (local.get $t)) (local.get $i) (local.get $end))
                (local.set $ntools (i32.add (local.get $ntools) (i32.const 1)))
                (br_if $kinds (global.get $fatal))))
            (local.set $p (call $ws (call $skip (local.get $p) (local.get $end)) (local.get $end)))
            (if (i32.eq (call $byte (local.get $p) (local.get $end)) (i32.const 44))
              (then
                (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br $action))))
          (br $kinds)))
      (return (call $answer (i32.const 1664))))
    (if (global.get $fatal) (then (return (call $answer (global.get $fatal)))))
    (if (i32.eqz (global.get $nfind))
      (then
        (global.set $ocur (global.get $OUT))
        (call $putz (i32.const 2112))
        (call $putint (local.get $ntools))
        (call $putz (i32.const 2240))
        (return (call $pack (global.get $OUT) (i32.sub (global.get $ocur) (global.get $OUT))))))
    (call $putz (i32.const 2048))
    (call $putint (local.get $ntools))
    (call $putz (i32.const 2240))
    (if (global.get $oflow) (then (return (call $answer (i32.const 1856)))))
    ;; the prefix goes just before the findings
    (local.set $pl (call $strlen (i32.const 1920)))
    (local.set $start (i32.sub (i32.add (global.get $OUT) (i32.const 256)) (local.get $pl)))
    (memory.copy (local.get $start) (i32.const 1920) (local.get $pl))
    (call $pack (local.get $start) (i32.sub (global.get $ocur) (local.get $start)))))
