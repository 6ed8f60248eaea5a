//go:build wasip1

// Command wasm builds the policy gate as a module:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm ./plugins/policy/wasm
package main

import (
	"github.com/gatehost/gatehost/plugins/policy"
	"github.com/gatehost/gatehost/sdk"
)

func init() { sdk.Register(policy.Gate) }

func main() {}
