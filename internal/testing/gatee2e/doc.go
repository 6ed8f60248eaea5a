// Package gatee2e holds the end-to-end tests of the built-in gates
// (plugins/): each gate's WebAssembly build run through package host,
// sandboxed, on the cases and data of testdata/, most of them compared with
// the gate's Go code run natively (sdk/gatetest) on the same inputs. The
// tests of the host itself stay in host/. It has no code of its own.
package gatee2e
