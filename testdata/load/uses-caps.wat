;; uses-caps: declares the catalog and session capabilities and a config
;; schema that accepts only max_actions and limits.depth (additionalProperties
;; false at both levels), and accepts every proposal without calling anything.
;; Used by host/load_checks_test.go and cmd/gatehost/cli_test.go: a stage that
;; withholds a declared capability, or whose config has a key the schema does
;; not accept, is refused at load with the key path.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi_version\":1,\"name\":\"uses-caps\",\"version\":\"0.0.1\",\"subject_kinds\":[\"proposal\"],\"capabilities\":[\"catalog\",\"session\"],\"config_schema\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"max_actions\":{\"type\":\"integer\"},\"limits\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"depth\":{\"type\":\"integer\"}}}}}}")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  ;; 16 << 32 | 329
  (func (export "gate_describe") (result i64) (i64.const 68719477065))
  (func (export "gate_alloc") (param i32) (result i32) (i32.const 8192))
  (data (i32.const 2048) "{\"verdict\":\"accepted\",\"basis\":\"verified\",\"evidence\":{\"ok\":true}}")
  ;; 2048 << 32 | 64
  (func (export "gate_evaluate") (param i32 i32) (result i64) (i64.const 8796093022272))
)
