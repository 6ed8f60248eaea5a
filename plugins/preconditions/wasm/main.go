//go:build wasip1

// Command wasm builds the preconditions gate as a module:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o preconditions.wasm ./plugins/preconditions/wasm
package main

import (
	"github.com/gatehost/gatehost/plugins/preconditions"
	"github.com/gatehost/gatehost/sdk"
)

func init() { sdk.Register(preconditions.Gate) }

func main() {}
