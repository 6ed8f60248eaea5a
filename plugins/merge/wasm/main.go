//go:build wasip1

// Command wasm builds the merge gate as a module:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o merge.wasm ./plugins/merge/wasm
package main

import (
	"github.com/gatehost/gatehost/plugins/merge"
	"github.com/gatehost/gatehost/sdk"
)

func init() { sdk.Register(merge.Gate) }

func main() {}
