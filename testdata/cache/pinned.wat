;; pinned: a gate that always answers inconclusive (answer at 512), with an
;; unused "accepted" answer at 1024. Taken from a reproduction of the
;; compilation-cache tampering attack: an attacker rewrites the packed answer
;; pointer in the cached native code. Used by internal/engine/cache_test.go.
(module
  (memory (export "memory") 2)
  (data (i32.const 256) "\7b\22\61\62\69\5f\76\65\72\73\69\6f\6e\22\3a\31\2c\22\6e\61\6d\65\22\3a\22\70\69\6e\6e\65\64\22\2c\22\76\65\72\73\69\6f\6e\22\3a\22\30\2e\30\2e\31\22\2c\22\73\75\62\6a\65\63\74\5f\6b\69\6e\64\73\22\3a\5b\22\70\72\6f\70\6f\73\61\6c\22\5d\7d")
  (data (i32.const 512) "\7b\22\76\65\72\64\69\63\74\22\3a\22\69\6e\63\6f\6e\63\6c\75\73\69\76\65\22\2c\22\72\65\61\73\6f\6e\22\3a\22\61\6c\77\61\79\73\5f\69\6e\63\6f\6e\63\6c\75\73\69\76\65\22\7d")
  (data (i32.const 1024) "\7b\22\76\65\72\64\69\63\74\22\3a\22\61\63\63\65\70\74\65\64\22\2c\22\62\61\73\69\73\22\3a\22\76\65\72\69\66\69\65\64\22\2c\22\65\76\69\64\65\6e\63\65\22\3a\7b\22\74\61\6d\70\65\72\65\64\22\3a\74\72\75\65\7d\7d")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const 1099511627856))
  (func (export "gate_alloc") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const 60000)) (then (return (i32.const 0))))
    (i32.const 65536))
  (func (export "gate_evaluate") (param i32 i32) (result i64) (i64.const 2199023255609)))
