// Package policy evaluates Cedar policies over tool calls and type-checks
// them against the tool catalog (docs/POLICY.md).
//
// NewSchema generates a Cedar schema from a catalog's tools: each tool is
// an action Action::"<tool id>" in the groups of its effect class, of
// destructive tools and of its namespace, applying to principal Caller
// and resource Server, its context's arguments typed from the tool's JSON
// Schema input schema (FromJSONSchema), its path arguments cleaned
// (CleanPath). Schema.Validate type-checks a parsed Set against it in
// Cedar's strict mode and reports each Problem at the name's
// file:line:column with the nearest real name.
//
// An Engine decides one Call: the Cedar request is built from the call,
// the tool's catalog record, the principal and the clock, and Cedar
// decides — deny unless a permit applies and no forbid does. A request
// that cannot be built or a policy whose evaluation errs is Decision
// Error, never an acceptance; Result.Response is the policy gate's answer.
// Fixture and DecodeFixture are the test files of gatehost policy test.
//
// The package depends on nothing of the host, so the policy gate
// (plugins/policy) links it into its WebAssembly module.
package policy
