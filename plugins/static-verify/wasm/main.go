//go:build wasip1

// Command wasm builds the static-verify gate as a module:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o static-verify.wasm ./plugins/static-verify/wasm
package main

import (
	staticverify "github.com/gatehost/gatehost/plugins/static-verify"
	"github.com/gatehost/gatehost/sdk"
)

func init() { sdk.Register(staticverify.Gate) }

func main() {}
