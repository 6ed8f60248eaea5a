// Package wasmrt selects the WebAssembly runtime under package engine at
// build time, so the rest of the engine is written once against these
// names. The default is wazy (github.com/samyfodil/wazy), a wazero fork whose
// compiled code checks for a done context at Go's preemption word; the build
// tag gatehost_wazero selects stock wazero, whose deadline check
// (WithCloseOnContextDone) costs 4-5x on gate calls. docs/PERFORMANCE.md has
// the figures; both pass the hostile-plugin suite.
package wasmrt
