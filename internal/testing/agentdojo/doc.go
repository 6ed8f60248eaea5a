// Package agentdojo measures the least-privilege Cedar policies of
// examples/policies/agentdojo against AgentDojo v1's four suites
// (testdata/agentdojo): every ground-truth call of the user tasks and of
// the injection tasks goes through package policy, and the test pins how
// many user-task calls are admitted and how many injection-task writes
// are refused (docs/GATES.md, "AgentDojo"); on the banking suite it also
// runs the preconditions gate's payee check beside the policies. The
// package has no code of its own: only those tests.
package agentdojo
