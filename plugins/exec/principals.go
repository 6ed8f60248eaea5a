package exec

import (
	"fmt"
	"slices"

	"github.com/gatehost/gatehost/abi"
)

// CodePrincipalNotAllowed is check 6's denial: the caller (the run's
// principal) may not call the tool under the config's principals rules.
const CodePrincipalNotAllowed = "principal_not_allowed"

// AnyTool in a rule's allow_tools permits every tool.
const AnyTool = "*"

// PrincipalRule is one entry of the config's principals list: when its
// condition matches the caller, it decides which tools the caller may
// call. The first matching rule decides; a caller no rule matches may call
// nothing.
type PrincipalRule struct {
	// Name labels the rule in findings and evidence; "" is
	// "principals[i]".
	Name string `json:"name,omitempty"`
	// When is the rule's condition.
	When PrincipalMatch `json:"when"`
	// AllowTools are canonical tool ids the caller may call; AnyTool is
	// every tool.
	AllowTools []string `json:"allow_tools,omitempty"`
	// ReadOnly permits, besides AllowTools, every tool whose effect class
	// is read_only.
	ReadOnly bool `json:"read_only,omitempty"`
}

// PrincipalMatch is a rule's condition. Every member given must hold; at
// least one is given. Anonymous matches only a run without a principal and
// combines with nothing else; every other member matches only a run with
// one.
type PrincipalMatch struct {
	// Anonymous: the run has no principal.
	Anonymous bool `json:"anonymous,omitempty"`
	// Authenticated: the run has a principal, whoever it is.
	Authenticated bool `json:"authenticated,omitempty"`
	// Method, Issuer and Subject equal the principal's exactly.
	Method  string `json:"method,omitempty"`
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Claims: each named claim equals the value, or is an array holding
	// it. Values are strings, numbers or booleans.
	Claims map[string]any `json:"claims,omitempty"`
}

func (m PrincipalMatch) empty() bool {
	return !m.Anonymous && !m.Authenticated && m.Method == "" && m.Issuer == "" && m.Subject == "" && len(m.Claims) == 0
}

// validate refuses a rule that could not be told apart from another shape:
// an empty condition (it would match everyone by accident), anonymous with
// another member (it could never match), a claim value that is not a
// scalar, an unknown method.
func (r PrincipalRule) validate(i int) error {
	where := fmt.Sprintf("principals[%d]", i)
	m := r.When
	switch {
	case m.empty():
		return fmt.Errorf("%s.when: give at least one of anonymous, authenticated, method, issuer, subject, claims", where)
	case m.Anonymous && (m.Authenticated || m.Method != "" || m.Issuer != "" || m.Subject != "" || len(m.Claims) > 0):
		return fmt.Errorf("%s.when: anonymous matches a caller without a principal and combines with nothing else", where)
	case m.Method != "" && m.Method != abi.MethodOIDC && m.Method != abi.MethodMTLS && m.Method != abi.MethodToken:
		return fmt.Errorf("%s.when.method: %q is not oidc, mtls or token", where, echo(m.Method))
	}
	for k, v := range m.Claims {
		switch v.(type) {
		case string, float64, bool:
		default:
			return fmt.Errorf("%s.when.claims.%s: want a string, number or boolean", where, echo(k))
		}
	}
	for _, id := range r.AllowTools {
		if id != AnyTool && !abi.IsToolIDShaped(id) {
			return fmt.Errorf("%s.allow_tools: %q is not a canonical tool id (namespace:name) or %q", where, echo(id), AnyTool)
		}
	}
	return nil
}

// label is how findings name rule i.
func (r PrincipalRule) label(i int) string {
	if r.Name != "" {
		return echo(r.Name)
	}
	return fmt.Sprintf("principals[%d]", i)
}

// matches reports whether the rule's condition holds for p (nil: no
// principal).
func (m PrincipalMatch) matches(p *abi.Principal) bool {
	if p == nil {
		return m.Anonymous
	}
	if m.Anonymous {
		return false
	}
	if (m.Method != "" && m.Method != p.Method) || (m.Issuer != "" && m.Issuer != p.Issuer) || (m.Subject != "" && m.Subject != p.Subject) {
		return false
	}
	for k, want := range m.Claims {
		if !claimHolds(p.Claims[k], want) {
			return false
		}
	}
	return true
}

// claimHolds: have equals want, or is an array with an element equal to
// want. Both come from JSON, so numbers are float64 on both sides; a claim
// of another kind (an object, null, absent) never holds.
func claimHolds(have, want any) bool {
	switch h := have.(type) {
	case string, float64, bool:
		return h == want
	case []any:
		return slices.ContainsFunc(h, func(e any) bool {
			switch e.(type) {
			case string, float64, bool:
				return e == want
			}
			return false
		})
	}
	return false
}

// permits reports whether the rule lets its caller call t.
func (r PrincipalRule) permits(t abi.Tool) bool {
	if slices.Contains(r.AllowTools, AnyTool) || slices.Contains(r.AllowTools, t.ID) {
		return true
	}
	return r.ReadOnly && effectOf(t) == EffectReadOnly
}

// who describes p for a message: method and subject, cut.
func who(p *abi.Principal) string {
	if p == nil {
		return "an anonymous caller"
	}
	return fmt.Sprintf("%s principal %q", p.Method, echo(p.Subject))
}

// checkPrincipal is check 6: with rules configured, the first rule
// matching the caller must permit the tool. It returns the index of the
// deciding rule (-1: none matched) and whether the call may go on.
func checkPrincipal(rules []PrincipalRule, p *abi.Principal, t abi.Tool) (rule int, ok bool, msg string) {
	for i, r := range rules {
		if !r.When.matches(p) {
			continue
		}
		if r.permits(t) {
			return i, true, ""
		}
		return i, false, fmt.Sprintf("%s: rule %s matches %s and does not allow this tool (effect %s)", t.ID, r.label(i), who(p), effectOf(t))
	}
	return -1, false, fmt.Sprintf("%s: no principals rule matches %s", t.ID, who(p))
}
