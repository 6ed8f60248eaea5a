package abi

// Merge is the native shape of a SubjectMerge: a worktree's file changes,
// checked before they are integrated (schema/merge.schema.json).
type Merge struct {
	// Base and Head name the two sides the changes were taken from, such
	// as git commit ids. Informative; recorded in evidence.
	Base string `json:"base,omitempty"`
	Head string `json:"head,omitempty"`
	// FileChanges are the files whose content differs between the sides.
	FileChanges []FileChange `json:"file_changes"`
	// Footprint is what the change declared it would write. Empty means
	// no declaration was made: the containment check is then skipped.
	Footprint []SymbolRef `json:"footprint,omitempty"`
	// Waiver is an operator's explicit, audited permission to accept the
	// change without a build/test run. It is never defaulted.
	Waiver *Waiver `json:"waiver,omitempty"`
}

// FileChange is one file's content before and after the change. A nil side
// means the file did not exist there (added or deleted).
type FileChange struct {
	// Path is repository-relative, with forward slashes.
	Path   string  `json:"path"`
	Before *string `json:"before,omitempty"`
	After  *string `json:"after,omitempty"`
	// ContentOmitted says the present sides carry no content (they are "")
	// because the file is binary, not UTF-8, or not of a language the
	// sender expects the gate to parse. The file is known to have changed.
	ContentOmitted bool `json:"content_omitted,omitempty"`
}

// SymbolRef names a symbol of a file. For Go: a function or type name
// ("Foo"), a method as receiver type and name ("Server.Close"), a top-level
// var or const name. "*" stands for every symbol of the file.
type SymbolRef struct {
	File   string `json:"file"`
	Symbol string `json:"symbol"`
}

// Waiver lets a change without a build/test run be accepted, with basis
// "waived". It fills only the missing build/test leg: it never overrides a
// failed build/test, a containment violation, a duplicate declaration or a
// policy deny.
type Waiver struct {
	// Reason says why no build/test is needed, such as "docs-only change".
	Reason string `json:"reason"`
	// ApprovedBy names who approved it.
	ApprovedBy string `json:"approved_by"`
	// Scope lists path patterns ("docs/**", "*.md"; ** spans directories)
	// the waiver covers. It applies only when every changed file matches
	// one of them.
	Scope []string `json:"scope"`
}

// Capability operations of the policy capability.
const (
	// OpPolicyMerge: request PolicyMergeRequest, answer PolicyMergeAnswer.
	// Consults the operator's policy about integrating a set of changed
	// files. A deny is absolute.
	OpPolicyMerge = "policy.merge"
)

// Policy decisions.
const (
	PolicyAllow = "allow"
	PolicyDeny  = "deny"
)

// PolicyMergeRequest asks whether a set of changed files may be integrated.
type PolicyMergeRequest struct {
	// Files are the changed files, each with its change: "added",
	// "deleted" or "modified".
	Files []PolicyFile `json:"files"`
	// Waived says a waiver that covers every changed file is present. Some
	// rules (effect require_waiver) allow a change only then.
	Waived bool `json:"waived"`
}

// PolicyFile is one changed file in a PolicyMergeRequest.
type PolicyFile struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}

// Change kinds of a file or symbol.
const (
	ChangeAdded    = "added"
	ChangeDeleted  = "deleted"
	ChangeModified = "modified"
)

// PolicyMergeAnswer is the policy's decision: Decision is PolicyAllow or
// PolicyDeny; Denials (non-empty exactly when denied) say which file broke
// which rule.
type PolicyMergeAnswer struct {
	Decision string         `json:"decision"`
	Denials  []PolicyDenial `json:"denials,omitempty"`
	// Policy names the policy that answered, for evidence.
	Policy string `json:"policy,omitempty"`
	// Rules is how many rules were consulted.
	Rules int `json:"rules"`
}

// PolicyDenial is one file a rule denies.
type PolicyDenial struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message,omitempty"`
}

// Capability operations of the check capability.
const (
	// OpCheckRun: request CheckRunRequest, answer CheckRunAnswer. Runs a
	// build/test command the operator configured under Name, in the
	// worktree of the run, with the operator's timeout. The gate names
	// the check; it can never supply a command line.
	OpCheckRun = "check.run"
)

// Check statuses in a CheckRunAnswer.
const (
	// CheckPassed: the command exited 0.
	CheckPassed = "passed"
	// CheckFailed: the command exited non-zero or ran past its timeout.
	CheckFailed = "failed"
	// CheckNotConfigured: the operator configured no check of that name.
	CheckNotConfigured = "not_configured"
)

// CheckRunRequest names an operator-configured check.
type CheckRunRequest struct {
	Name string `json:"name"`
}

// CheckRunAnswer is the outcome of a check run. A command that could not be
// started, or a run without a worktree, is a call error (unavailable), not
// an answer.
type CheckRunAnswer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// ExitCode is the command's exit status; -1 when it was killed at its
	// timeout (TimedOut).
	ExitCode   int   `json:"exit_code"`
	TimedOut   bool  `json:"timed_out,omitempty"`
	DurationMS int64 `json:"duration_ms"`
	// OutputTail is the last bytes (at most 4 KiB) of the command's
	// combined stdout and stderr.
	OutputTail string `json:"output_tail,omitempty"`
}
