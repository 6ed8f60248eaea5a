package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/policy"
)

// policyGate is the descriptor name of the built-in policy gate, whose
// stage configs hold Cedar policies (docs/POLICY.md).
const policyGate = "policy"

// CodePolicyInvalid: a policy stage of the gateway's pipeline holds a
// policy that does not type-check against the catalog the gateway built
// from its trust baseline (it names a tool, argument, attribute or claim
// that does not exist). Every call is refused until it does.
const CodePolicyInvalid = "policy_invalid"

// kindPolicyInvalid and kindPolicyValid: the event-log records of the
// check's verdict changing.
const (
	kindPolicyInvalid = "mcp_policy_invalid"
	kindPolicyValid   = "mcp_policy_valid"
)

// policyVerdict is the check of the pipeline's policy stages against one
// catalog snapshot of one host.
type policyVerdict struct {
	h   *host.Host
	gen uint64
	err error
	// engines are the policy stages' engines when err is nil.
	engines []*policy.Engine
}

// PolicyError is a policy stage's policies that do not type-check against
// the gateway's catalog; Problems name FILE:LINE:COLUMN.
type PolicyError struct {
	Stage    string
	Problems []policy.Problem
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("stage %s: the policies do not type-check against the gateway's catalog: %v", e.Stage, &policy.ValidationError{Problems: e.Problems})
}

// checkPolicies type-checks the policy stages of the gateway's pipeline
// against the catalog as published now (built from the trust baseline),
// as gatehost policy validate does for a file catalog. The verdict is kept
// for the catalog's generation: a new listing, an approval or a reload
// checks again, so that a policy made invalid by a changed upstream is
// caught at once and one made valid again decides normally. A change of
// verdict is logged and recorded.
func (g *Gateway) checkPolicies() error {
	_, err := g.policyEngines()
	return err
}

// policyEngines is checkPolicies with the policy stages' engines (none
// for a pipeline without a policy stage).
func (g *Gateway) policyEngines() ([]*policy.Engine, error) {
	h := g.Host()
	snap := h.Catalog().Snapshot()
	g.mu.Lock()
	pending := g.unlistedUpstreams(g.published)
	g.mu.Unlock()
	g.policyMu.Lock()
	defer g.policyMu.Unlock()
	if v := g.policyV; v != nil && v.h == h && v.gen == snap.Generation() {
		return v.engines, v.err
	}
	engines, err := validatePolicyStages(h.Stages(g.opts.Pipeline), snap, pending, h.CounterWindows())
	var prev error
	if g.policyV != nil {
		prev = g.policyV.err
	}
	g.policyV = &policyVerdict{h: h, gen: snap.Generation(), err: err, engines: engines}
	switch {
	case err != nil && (prev == nil || prev.Error() != err.Error()):
		g.opts.Logger.Error("mcp gateway: a policy does not type-check against the catalog; every call is refused", "error", err)
		b, _ := json.Marshal(err.Error())
		g.recordEdge(kindPolicyInvalid, map[string]any{"reason": json.RawMessage(b)})
	case err == nil && prev != nil:
		g.opts.Logger.Info("mcp gateway: the policies type-check against the catalog again; calls are decided")
		g.recordEdge(kindPolicyValid, map[string]any{})
	}
	return engines, err
}

// mayCall reports whether the pipeline's policy stages could accept some
// call of t by principal (policy.Engine.MayPermit): tools/list shows a
// principal only those. Hiding is not the enforcement — a call of a
// hidden tool is decided, and refused, by the gate. While the policies do
// not type-check every call is refused and nothing is hidden.
func (g *Gateway) mayCall(ctx context.Context, t catalog.Tool, principal *abi.Principal) bool {
	engines, err := g.policyEngines()
	if err != nil {
		return true
	}
	for _, e := range engines {
		if may, _ := e.MayPermit(ctx, t.ABI(), principal); !may {
			return false
		}
	}
	return true
}

// policyRefusal is the refusal of a call while checkPolicies fails.
func (g *Gateway) policyRefusal() []abi.Finding {
	err := g.checkPolicies()
	if err == nil {
		return nil
	}
	return []abi.Finding{{Code: CodePolicyInvalid, Severity: abi.Blocking,
		Message: "every call is refused until the policies type-check: " + err.Error()}}
}

// policyError is the latest verdict, for /readyz and metrics; nil when the
// policies type-check or were not checked yet.
func (g *Gateway) policyError() error {
	g.policyMu.Lock()
	defer g.policyMu.Unlock()
	if g.policyV == nil {
		return nil
	}
	return g.policyV.err
}

// baselineCovers reports whether every configured upstream has a tool in
// set: only then is the verdict logged and recorded at a listing.
func (g *Gateway) baselineCovers(set *baseline.Set) bool {
	return len(g.unlistedUpstreams(set)) == 0
}

// unlistedUpstreams are the configured upstreams without a tool in set
// (nil: every one). A policy naming a tool of one (mcp.UPSTREAM:NAME) is
// not called wrong for want of its listing, as checkNamesPartly does for
// the config's names; the gate decides such a call (no tool, no permit).
func (g *Gateway) unlistedUpstreams(set *baseline.Set) []string {
	has := map[string]bool{}
	if set != nil {
		for _, e := range set.Entries() {
			if _, instr := e.Instructions(); !instr {
				has[e.Upstream] = true
			}
		}
	}
	var out []string
	for _, u := range g.opts.Upstreams {
		if !has[u.Name] {
			out = append(out, u.Name)
		}
	}
	return out
}

// pendingProblem reports whether p names a tool of an upstream in pending
// (as an action, a literal or a key of the session's counts), or its
// namespace. (A tool's arguments are not reported while the tool is
// unknown: policy.Schema.Validate.)
func pendingProblem(p policy.Problem, pending []string) bool {
	for _, u := range pending {
		if strings.HasPrefix(p.Name, "mcp."+u+":") || (p.Kind == policy.KindEntity && p.Name == "mcp."+u) {
			return true
		}
	}
	return false
}

// validatePolicyStages type-checks each policy stage's policies against a
// schema generated from snap, and returns their engines. A problem that
// names a tool of a pending upstream (unlistedUpstreams) is left out.
func validatePolicyStages(stages []host.StageInfo, snap *catalog.Snapshot, pending []string, counted []time.Duration) ([]*policy.Engine, error) {
	var engines []*policy.Engine
	var tools []abi.Tool
	for _, st := range stages {
		if st.Gate != policyGate || len(bytes.TrimSpace(st.Config)) == 0 {
			continue
		}
		if tools == nil {
			tools = []abi.Tool{}
			for _, t := range snap.List() {
				tools = append(tools, t.ABI())
			}
		}
		set, o, err := policy.ParseStageConfig(st.Config)
		if err != nil {
			return nil, fmt.Errorf("stage %s: config: %w", st.Name, err)
		}
		for _, w := range o.Windows {
			if d, err := abi.ParseWindow(w); err != nil || !slices.Contains(counted, d) {
				return nil, fmt.Errorf("stage %s: config.windows: window %s is not one the host counts (counters.windows)", st.Name, w)
			}
		}
		s, err := policy.NewSchema(tools, o)
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name, err)
		}
		ps := slices.DeleteFunc(s.Validate(set), func(p policy.Problem) bool { return pendingProblem(p, pending) })
		if len(ps) > 0 {
			return nil, &PolicyError{Stage: st.Name, Problems: ps}
		}
		engines = append(engines, policy.NewEngine(set, o))
	}
	return engines, nil
}
