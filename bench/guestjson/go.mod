module github.com/gatehost/gatehost/bench/guestjson

go 1.26.0

replace github.com/gatehost/gatehost => ../..

require (
	github.com/gatehost/gatehost v0.0.0-00010101000000-000000000000
	github.com/goccy/go-json v0.12.0
	github.com/segmentio/encoding v0.5.4
	github.com/stretchr/testify v1.12.1
	github.com/valyala/fastjson v1.6.10
)

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
