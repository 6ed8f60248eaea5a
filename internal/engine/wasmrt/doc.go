// Package wasmrt selects the WebAssembly runtime under package engine at
// build time, so the rest of the engine is written once against these
// names. The default is stock wazero (github.com/tetratelabs/wazero); guests
// are stopped at their deadline by the engine's load-time interrupt rewrite
// (package rewrite), not by wazero's WithCloseOnContextDone, which calls
// into Go at every loop header. The build tag gatehost_wazy selects wazy
// (github.com/samyfodil/wazy), a wazero fork whose compiled code also
// checks for a done context at Go's preemption word: a young,
// single-maintainer fork that depends on the Go runtime's internal layout.
// docs/PERFORMANCE.md has the figures; both pass the hostile-plugin suite,
// and docs/RATIONALE.md says why wazero is the default.
package wasmrt
