// Package wasmrt selects the WebAssembly runtime under package engine at
// build time, so the rest of the engine is written once against these
// names. The default is stock wazero (github.com/tetratelabs/wazero) with its
// deadline check (WithCloseOnContextDone) on. The build tag gatehost_wazy
// selects wazy (github.com/samyfodil/wazy), a wazero fork whose compiled code
// checks for a done context at Go's preemption word: 4-7x faster gate calls,
// but a young, single-maintainer fork that depends on the Go runtime's
// internal layout. docs/PERFORMANCE.md has the figures; both pass the
// hostile-plugin suite, and docs/RATIONALE.md says why wazero is the default.
package wasmrt
