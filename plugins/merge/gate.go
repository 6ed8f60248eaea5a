// Package merge is the merge gate: it verifies a worktree's file changes
// before they are integrated, fail-closed. Acceptance needs positive
// evidence — a build/test that passed, or an explicit audited waiver; the
// absence of a failure is never acceptance.
//
// Checks, in order (docs/GATES.md#merge):
//
//  1. containment: every changed symbol must lie inside the declared
//     footprint; skipped, and recorded as skipped, when none was declared;
//  2. duplicate declarations in one file after the change;
//  3. policy, through the host's policy capability (a deny is absolute);
//  4. build/test, through the host's check capability, naming a check the
//     operator configured; it runs only when 1–3 found nothing.
//
// Symbols are exact for Go (go/parser); any other changed file, or a Go file
// that does not parse, is listed as unparsed and left to build/test. The
// evidence records every check as ran, skipped or not_run with its
// findings. Decide holds the verdict logic.
package merge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/pathglob"
	"github.com/gatehost/gatehost/sdk"
)

// Finding codes.
const (
	CodeContainmentViolation = "containment_violation"
	CodeDuplicateDeclaration = "duplicate_declaration"
	CodePolicyDenied         = "policy_denied"
	CodeBuildTestFailed      = "build_test_failed"
	CodeUnparsedChangedFile  = "unparsed_changed_file"
	CodePolicyUnavailable    = "policy_unavailable"
	CodeCheckUnavailable     = "check_unavailable"
	CodeWaiverOutOfScope     = "waiver_out_of_scope"
)

// Check statuses in the evidence.
const (
	StatusRan     = "ran"
	StatusSkipped = "skipped"
	StatusNotRun  = "not_run"
)

// Capabilities the gate calls (abi's names).
const (
	CapabilityPolicy = abi.CapabilityPolicy
	CapabilityCheck  = abi.CapabilityCheck
)

const configSchema = `{
  "type": "object",
  "properties": {
    "check": {"type": "string", "minLength": 1, "description": "name of the operator-configured build/test check to run"}
  },
  "additionalProperties": false
}`

// Gate is the merge gate.
var Gate = sdk.Gate{
	Descriptor: abi.Descriptor{
		ABIVersion:   abi.MajorVersion,
		Name:         "merge",
		Version:      "1.0.0",
		Description:  "Verifies a worktree's changes before integration: symbol containment, duplicate declarations, policy, and a build/test the operator configured.",
		SubjectKinds: []abi.SubjectKind{abi.SubjectMerge},
		Capabilities: []string{CapabilityPolicy, CapabilityCheck},
		ConfigSchema: json.RawMessage(configSchema),
	},
	Evaluate: evaluate,
}

// Config is the stage config.
type Config struct {
	// Check names the build/test check to run; "" means none is
	// configured for this stage.
	Check string `json:"check,omitempty"`
}

// configs keeps the parsed config of each stage config seen (a module
// instance serves many runs of the same stage).
var configs sdk.Derived[Config]

// parseConfig decodes a stage config strictly; absent or null is the zero
// Config.
func parseConfig(raw json.RawMessage) (Config, error) {
	var cfg Config
	if len(raw) > 0 && string(raw) != "null" {
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.DisallowUnknownFields()
		if err := d.Decode(&cfg); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

func evaluate(ctx context.Context, req sdk.Request) (abi.Response, error) {
	if req.SubjectKind != abi.SubjectMerge {
		return sdk.Inconclusive(abi.ReasonUnsupportedSubject, fmt.Errorf("merge: subject kind %q", req.SubjectKind)), nil
	}
	cfg, err := configs.Get(req, parseConfig)
	if err != nil {
		return sdk.Inconclusive(abi.ReasonBadConfig, err), nil
	}
	var m abi.Merge
	if err := json.Unmarshal(req.Subject, &m); err != nil {
		return sdk.Inconclusive(sdk.ReasonBadRequest, fmt.Errorf("merge: decode subject: %w", err)), nil
	}
	return Verify(m, cfg, req.Host), nil
}

// Verify runs the gate on m with host h (for the policy and check
// capabilities) and returns the response.
func Verify(m abi.Merge, cfg Config, h sdk.Host) abi.Response {
	var findings []abi.Finding
	ev := map[string]any{}
	if m.Base != "" || m.Head != "" {
		ev["base"], ev["head"] = m.Base, m.Head
	}

	changed := changedFiles(m.FileChanges)
	ch := ExtractChanges(m.FileChanges)
	ev["changed_files"] = len(changed)
	ev["changed_symbols"] = ch.Symbols
	ev["unparsed_changed_files"] = ch.UnparsedChangedFiles
	if len(ch.ParseErrors) > 0 {
		ev["parse_errors"] = ch.ParseErrors
	}
	for _, f := range ch.UnparsedChangedFiles {
		findings = append(findings, abi.Finding{
			Code: CodeUnparsedChangedFile, Severity: abi.Advisory, Tier: abi.DecisionProcedure,
			Message: f + ": changed, but its symbols cannot be checked; only build/test covers it",
			Details: map[string]any{"file": f},
		})
	}
	checks := map[string]any{}
	ev["checks"] = checks

	// 1. containment.
	var violations []ContainmentViolation
	if len(m.Footprint) == 0 {
		checks["containment"] = map[string]any{"status": StatusSkipped, "why": "no footprint declared"}
	} else {
		violations = ContainmentViolations(ch.Symbols, m.Footprint)
		checks["containment"] = map[string]any{"status": StatusRan, "footprint": m.Footprint, "violations": orEmpty(violations)}
		for _, v := range violations {
			findings = append(findings, abi.Finding{
				Code: CodeContainmentViolation, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
				Message: fmt.Sprintf("%s: %s %s %s outside the declared footprint", v.File, v.Kind, v.Symbol, v.Change),
				Details: map[string]any{"file": v.File, "symbol": v.Symbol, "kind": v.Kind, "change": v.Change},
			})
		}
	}

	// 2. duplicate declarations.
	dups := DuplicateDeclarations(ch)
	checks["duplicate_declarations"] = map[string]any{"status": StatusRan, "files": len(ch.after), "duplicates": orEmpty(dups)}
	for _, d := range dups {
		findings = append(findings, abi.Finding{
			Code: CodeDuplicateDeclaration, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
			Message: fmt.Sprintf("%s: %s declared %d times (lines %v)", d.File, d.Symbol, len(d.Lines), d.Lines),
			Details: map[string]any{"file": d.File, "symbol": d.Symbol, "kinds": d.Kinds, "lines": d.Lines},
		})
	}

	// The waiver: recorded in full, applied only if it covers every file.
	waiver := WaiverNone
	if m.Waiver != nil {
		uncovered := uncoveredFiles(changed, m.Waiver.Scope)
		waiver = WaiverApplies
		if len(uncovered) > 0 || len(m.Waiver.Scope) == 0 {
			waiver = WaiverOutOfScope
			findings = append(findings, abi.Finding{
				Code: CodeWaiverOutOfScope, Severity: abi.Advisory, Tier: abi.DecisionProcedure,
				Message: fmt.Sprintf("waiver by %s does not cover %d changed file(s); it is not used", m.Waiver.ApprovedBy, len(uncovered)),
				Details: map[string]any{"uncovered": uncovered},
			})
		}
		ev["waiver"] = map[string]any{"reason": m.Waiver.Reason, "approved_by": m.Waiver.ApprovedBy, "scope": m.Waiver.Scope, "state": waiver}
	}

	// 3. policy.
	policy := PolicyUnknown
	req := abi.PolicyMergeRequest{Files: changed, Waived: waiver == WaiverApplies}
	ans, err := sdk.Call[abi.PolicyMergeAnswer](h, abi.OpPolicyMerge, req)
	switch {
	case err != nil:
		checks["policy"] = map[string]any{"status": StatusNotRun, "error": err.Error()}
		findings = append(findings, abi.Finding{Code: CodePolicyUnavailable, Severity: abi.Advisory,
			Message: "policy could not be consulted: " + err.Error()})
	case ans.Decision == abi.PolicyAllow && len(ans.Denials) == 0:
		policy = PolicyAllow
		checks["policy"] = map[string]any{"status": StatusRan, "decision": ans.Decision, "policy": ans.Policy, "rules": ans.Rules}
	case ans.Decision == abi.PolicyDeny || len(ans.Denials) > 0:
		policy = PolicyDeny
		checks["policy"] = map[string]any{"status": StatusRan, "decision": abi.PolicyDeny, "policy": ans.Policy, "rules": ans.Rules, "denials": ans.Denials}
		for _, d := range ans.Denials {
			findings = append(findings, abi.Finding{Code: CodePolicyDenied, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
				Message: fmt.Sprintf("%s: denied by policy rule %s: %s", d.Path, d.Rule, d.Message),
				Details: map[string]any{"file": d.Path, "rule": d.Rule}})
		}
		if len(ans.Denials) == 0 {
			findings = append(findings, abi.Finding{Code: CodePolicyDenied, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
				Message: "denied by policy " + ans.Policy})
		}
	default: // an answer outside the contract is not an allow
		checks["policy"] = map[string]any{"status": StatusRan, "decision": ans.Decision, "error": "unknown decision"}
		findings = append(findings, abi.Finding{Code: CodePolicyUnavailable, Severity: abi.Advisory,
			Message: fmt.Sprintf("policy answered unknown decision %q", ans.Decision)})
	}

	// 4. build/test: only when 1–3 passed.
	build := BuildNotRun
	switch {
	case len(violations) > 0 || len(dups) > 0 || policy != PolicyAllow:
		checks["build_test"] = map[string]any{"status": StatusNotRun, "result": BuildNotRun, "why": "an earlier check did not pass"}
	case cfg.Check == "":
		build = BuildNotConfigured
		checks["build_test"] = map[string]any{"status": StatusSkipped, "result": BuildNotConfigured, "why": "the stage names no check"}
	default:
		build = runCheck(h, cfg.Check, checks, &findings)
	}

	out := Decide(Inputs{ContainmentViolations: len(violations), DuplicateDeclarations: len(dups), Policy: policy, BuildTest: build, Waiver: waiver})
	ev["decision"] = map[string]any{"containment_violations": len(violations), "duplicate_declarations": len(dups),
		"policy": policy, "build_test": build, "waiver": waiver}
	return abi.Response{Verdict: out.Verdict, Basis: out.Basis, Reason: out.Reason, Findings: findings, Evidence: ev}
}

func runCheck(h sdk.Host, name string, checks map[string]any, findings *[]abi.Finding) BuildTestStatus {
	a, err := sdk.Call[abi.CheckRunAnswer](h, abi.OpCheckRun, abi.CheckRunRequest{Name: name})
	if err != nil {
		checks["build_test"] = map[string]any{"status": StatusNotRun, "result": BuildUnavailable, "check": name, "error": err.Error()}
		*findings = append(*findings, abi.Finding{Code: CodeCheckUnavailable, Severity: abi.Advisory,
			Message: fmt.Sprintf("check %s could not run: %v", name, err)})
		return BuildUnavailable
	}
	rec := map[string]any{"status": StatusRan, "result": a.Status, "check": name, "exit_code": a.ExitCode, "duration_ms": a.DurationMS}
	checks["build_test"] = rec
	switch a.Status {
	case abi.CheckPassed:
		return BuildPassed
	case abi.CheckFailed:
		rec["output_tail"] = a.OutputTail
		if a.TimedOut {
			rec["timed_out"] = true
		}
		*findings = append(*findings, abi.Finding{Code: CodeBuildTestFailed, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
			Message: fmt.Sprintf("check %s failed with exit code %d", name, a.ExitCode),
			Details: map[string]any{"check": name, "exit_code": a.ExitCode, "timed_out": a.TimedOut, "output_tail": a.OutputTail}})
		return BuildFailed
	case abi.CheckNotConfigured:
		rec["status"] = StatusSkipped
		return BuildNotConfigured
	}
	rec["status"], rec["result"] = StatusNotRun, BuildUnavailable
	*findings = append(*findings, abi.Finding{Code: CodeCheckUnavailable, Severity: abi.Advisory,
		Message: fmt.Sprintf("check %s answered unknown status %q", name, a.Status)})
	return BuildUnavailable
}

// changedFiles lists the files whose content differs, with their change.
func changedFiles(changes []abi.FileChange) []abi.PolicyFile {
	out := []abi.PolicyFile{}
	for _, fc := range changes {
		switch {
		case fc.Before == nil && fc.After == nil:
			continue
		case fc.Before == nil:
			out = append(out, abi.PolicyFile{Path: fc.Path, Change: abi.ChangeAdded})
		case fc.After == nil:
			out = append(out, abi.PolicyFile{Path: fc.Path, Change: abi.ChangeDeleted})
		case fc.ContentOmitted || *fc.Before != *fc.After:
			out = append(out, abi.PolicyFile{Path: fc.Path, Change: abi.ChangeModified})
		}
	}
	slices.SortFunc(out, func(a, b abi.PolicyFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func uncoveredFiles(files []abi.PolicyFile, scope []string) []string {
	out := []string{}
	for _, f := range files {
		if !slices.ContainsFunc(scope, func(p string) bool { return pathglob.Valid(p) == nil && pathglob.Match(p, f.Path) }) {
			out = append(out, f.Path)
		}
	}
	return out
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
