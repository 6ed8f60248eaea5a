package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/apart"
	"github.com/gatehost/gatehost/internal/pathglob"
)

// The policy capability (abi.CapabilityPolicy) lets a stage consult the
// operator's policy (operation policy.merge; abi/SPEC.md §7.10).
func init() { registerCapability(abi.CapabilityPolicy, policyCapability{}) }

// Policy decides whether changes may be integrated. Config.Policy holds the
// host's; PathPolicy is the embedded default, and embedders may supply
// their own (for example one that asks a policy engine). An error means the
// policy could not decide; the gate then cannot accept.
type Policy interface {
	// Merge answers about one set of changed files. A deny is absolute:
	// a gate never overrides it. Implementations must be safe for
	// concurrent use.
	Merge(ctx context.Context, req abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error)
}

// Effects of a PathRule.
const (
	// EffectDeny denies any change to a matching path. Nothing lifts it.
	EffectDeny = "deny"
	// EffectRequireWaiver denies a change to a matching path unless the
	// run carries a waiver whose scope covers every changed file. The
	// waiver is audited with the run; it still never replaces a build/test
	// that ran and failed.
	EffectRequireWaiver = "require_waiver"
)

// PathRule is one rule of a PathPolicy.
type PathRule struct {
	// Name identifies the rule in denials and evidence.
	Name string
	// Paths are patterns over repository paths ("go.mod",
	// ".github/workflows/**"; see internal/pathglob: ** spans directories).
	Paths []string
	// Effect is EffectDeny or EffectRequireWaiver.
	Effect string
	// Message is shown with a denial.
	Message string
}

// PathPolicy is the embedded default Policy: path rules. A changed file
// (added, deleted or modified) that matches a rule's pattern is denied per
// the rule's effect; with no matching rule a change is allowed. The zero
// value has no rules and allows everything.
type PathPolicy struct {
	rules []PathRule
}

// NewPathPolicy validates rules and returns the policy. It fails with a
// *ConfigError naming the rule's field.
func NewPathPolicy(rules []PathRule) (*PathPolicy, error) {
	seen := map[string]bool{}
	for i, r := range rules {
		f := fmt.Sprintf("policy.rules[%d]", i)
		switch {
		case r.Name == "":
			return nil, cfgErr(f+".name", "required")
		case seen[r.Name]:
			return nil, cfgErr(f+".name", "duplicate rule name %q", r.Name)
		case len(r.Paths) == 0:
			return nil, cfgErr(f+".paths", "at least one pattern is required")
		case r.Effect != EffectDeny && r.Effect != EffectRequireWaiver:
			return nil, cfgErr(f+".effect", "%q is not %s or %s", r.Effect, EffectDeny, EffectRequireWaiver)
		}
		for j, p := range r.Paths {
			if err := pathglob.Valid(p); err != nil {
				return nil, &ConfigError{Field: fmt.Sprintf("%s.paths[%d]", f, j), Reason: "bad pattern", Err: err}
			}
		}
		seen[r.Name] = true
	}
	return &PathPolicy{rules: slices.Clone(rules)}, nil
}

// Merge implements Policy.
func (p *PathPolicy) Merge(_ context.Context, req abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
	a := abi.PolicyMergeAnswer{Decision: abi.PolicyAllow, Policy: "path_rules"}
	if p == nil {
		return a, nil
	}
	a.Rules = len(p.rules)
	for _, f := range req.Files {
		for _, r := range p.rules {
			if !slices.ContainsFunc(r.Paths, func(pat string) bool { return pathglob.Match(pat, f.Path) }) {
				continue
			}
			if r.Effect == EffectRequireWaiver && req.Waived {
				continue
			}
			msg := r.Message
			if msg == "" && r.Effect == EffectRequireWaiver {
				msg = "changes here need an audited waiver"
			}
			a.Denials = append(a.Denials, abi.PolicyDenial{Path: f.Path, Rule: r.Name, Message: msg})
		}
	}
	if len(a.Denials) > 0 {
		a.Decision = abi.PolicyDeny
	}
	return a, nil
}

type policyCapability struct{}

func (policyCapability) call(ctx context.Context, rc *runContext, op string, request []byte) (any, error) {
	if op != abi.OpPolicyMerge {
		return nil, unknownOperation(op)
	}
	var req abi.PolicyMergeRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, badRequest(op, err)
	}
	var pol Policy = (*PathPolicy)(nil)
	if rc.host.cfg.Policy != nil {
		pol = rc.host.cfg.Policy
	}
	a, err := safePolicy(ctx, pol, req)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	// A deny is absolute: an answer with denials is a deny whatever its
	// decision says, and anything but allow or deny is no answer.
	if len(a.Denials) > 0 {
		a.Decision = abi.PolicyDeny
	}
	if a.Decision != abi.PolicyAllow && a.Decision != abi.PolicyDeny {
		return nil, fmt.Errorf("policy: unknown decision %q", a.Decision)
	}
	return a, nil
}

// safePolicy calls an embedder's policy, turns a panic into an error, and
// returns when ctx (the stage) ends even if the policy does not: the stage
// runs its guest on its own goroutine and ends only when this call returns.
func safePolicy(ctx context.Context, p Policy, req abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
	type result struct {
		a   abi.PolicyMergeAnswer
		err error
	}
	r, err := apart.Run(ctx, func() (r result) {
		r.a, r.err = p.Merge(ctx, req)
		return r
	})
	var pe *apart.PanicError
	switch {
	case errors.As(err, &pe):
		return abi.PolicyMergeAnswer{}, fmt.Errorf("policy panicked: %v", pe.Value)
	case err != nil:
		return abi.PolicyMergeAnswer{}, fmt.Errorf("policy did not answer before the stage ended: %w", ctx.Err())
	}
	return r.a, r.err
}
