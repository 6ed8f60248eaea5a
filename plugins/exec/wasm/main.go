//go:build wasip1

// Command wasm builds the exec gate as a module:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o exec.wasm ./plugins/exec/wasm
package main

import (
	"github.com/gatehost/gatehost/plugins/exec"
	"github.com/gatehost/gatehost/sdk"
)

func init() { sdk.Register(exec.Gate) }

func main() {}
