package merge

import "github.com/gatehost/gatehost/abi"

// PolicyOutcome is what the policy consult found.
type PolicyOutcome string

const (
	PolicyAllow PolicyOutcome = "allow"
	PolicyDeny  PolicyOutcome = "deny"
	// PolicyUnknown: the policy could not be consulted (not granted, or
	// it failed). It is never acceptance-eligible.
	PolicyUnknown PolicyOutcome = "unknown"
)

// BuildTestStatus is the outcome of the build/test leg. NotConfigured (no
// check was named, or the host has none of that name) and NotRun (an earlier
// check already failed) are kept apart from each other and from Passed, so
// neither the verdict nor the audit can confuse "forgot" with "ran".
type BuildTestStatus string

const (
	BuildNotConfigured BuildTestStatus = "not_configured"
	BuildNotRun        BuildTestStatus = "not_run"
	BuildPassed        BuildTestStatus = "passed"
	BuildFailed        BuildTestStatus = "failed"
	// BuildUnavailable: a check was configured but the host could not run
	// it (no worktree, the command could not start, the capability was
	// not granted). It is a fault to fix, not a missing leg: a waiver
	// does not fill it.
	BuildUnavailable BuildTestStatus = "unavailable"
)

// WaiverState says whether a waiver can fill the missing build/test leg.
type WaiverState string

const (
	WaiverNone WaiverState = "none"
	// WaiverApplies: a waiver is present and its scope covers every
	// changed file.
	WaiverApplies WaiverState = "applies"
	// WaiverOutOfScope: a waiver is present but some changed file lies
	// outside its scope; it is recorded and not used.
	WaiverOutOfScope WaiverState = "out_of_scope"
)

// Inputs are what Decide needs.
type Inputs struct {
	ContainmentViolations int
	DuplicateDeclarations int
	Policy                PolicyOutcome
	BuildTest             BuildTestStatus
	Waiver                WaiverState
}

// Outcome is the decision: a verdict, with the basis of an acceptance or the
// reason of an inconclusive verdict.
type Outcome struct {
	Verdict abi.Verdict
	Basis   string
	Reason  string
}

// Bases of acceptance and reasons of inconclusive outcomes.
const (
	BasisVerified = "verified"
	BasisWaived   = "waived"

	ReasonPolicyUnavailable   = "policy_unavailable"
	ReasonCheckUnavailable    = "check_unavailable"
	ReasonNotConfigured       = "build_test_not_configured"
	ReasonNotRun              = "build_test_not_run"
	ReasonWaiverOutOfScope    = "waiver_out_of_scope"
	ReasonUnknownBuildOutcome = "unknown_build_test_status"
)

// Decide is the acceptance decision (docs/GATES.md#merge), pure so that it can be
// tested exhaustively. Acceptance needs positive evidence; every "we don't
// know" resolves to rejected or inconclusive:
//
//  1. any containment violation, duplicate declaration, or a policy deny →
//     rejected;
//  2. otherwise build/test failed → rejected;
//  3. otherwise the policy could not be consulted → inconclusive
//     (policy_unavailable): an unconsulted policy is not an allow;
//  4. otherwise build/test passed → accepted, basis verified;
//  5. otherwise build/test unavailable → inconclusive (check_unavailable);
//  6. otherwise (not_configured or not_run) → accepted, basis waived, when a
//     waiver applies; else inconclusive.
//
// An input outside its enumeration counts as the least favourable value.
func Decide(in Inputs) Outcome {
	if in.ContainmentViolations != 0 || in.DuplicateDeclarations != 0 || in.Policy == PolicyDeny {
		return Outcome{Verdict: abi.Rejected}
	}
	if in.BuildTest == BuildFailed {
		return Outcome{Verdict: abi.Rejected}
	}
	if in.Policy != PolicyAllow {
		return Outcome{Verdict: abi.Inconclusive, Reason: ReasonPolicyUnavailable}
	}
	switch in.BuildTest {
	case BuildPassed:
		return Outcome{Verdict: abi.Accepted, Basis: BasisVerified}
	case BuildNotConfigured, BuildNotRun:
		switch in.Waiver {
		case WaiverApplies:
			return Outcome{Verdict: abi.Accepted, Basis: BasisWaived}
		case WaiverOutOfScope:
			return Outcome{Verdict: abi.Inconclusive, Reason: ReasonWaiverOutOfScope}
		}
		if in.BuildTest == BuildNotRun {
			return Outcome{Verdict: abi.Inconclusive, Reason: ReasonNotRun}
		}
		return Outcome{Verdict: abi.Inconclusive, Reason: ReasonNotConfigured}
	case BuildUnavailable:
		return Outcome{Verdict: abi.Inconclusive, Reason: ReasonCheckUnavailable}
	}
	return Outcome{Verdict: abi.Inconclusive, Reason: ReasonUnknownBuildOutcome}
}
