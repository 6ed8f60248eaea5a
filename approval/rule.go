package approval

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
)

// An Approver names the principals who may approve: every field set must
// match (an empty field matches anything), and at least one is set.
// Claims match when the principal's claim equals the value, or is an
// array holding it (a groups or roles claim).
type Approver struct {
	Method  string            `json:"method,omitempty" mapstructure:"method"`
	Issuer  string            `json:"issuer,omitempty" mapstructure:"issuer"`
	Subject string            `json:"subject,omitempty" mapstructure:"subject"`
	Claims  map[string]string `json:"claims,omitempty" mapstructure:"claims"`
}

// Check reports an approver that names nothing.
func (a Approver) Check() error {
	if a.Method == "" && a.Issuer == "" && a.Subject == "" && len(a.Claims) == 0 {
		return fmt.Errorf("names no method, issuer, subject or claim: it would let anyone approve")
	}
	switch a.Method {
	case "", abi.MethodOIDC, abi.MethodMTLS, abi.MethodToken:
	default:
		return fmt.Errorf("method %q: want %s, %s or %s", a.Method, abi.MethodOIDC, abi.MethodMTLS, abi.MethodToken)
	}
	for k := range a.Claims {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("claims: an empty claim name")
		}
	}
	return nil
}

// Matches reports whether p is one of the principals a names.
func (a Approver) Matches(p *abi.Principal) bool {
	if p == nil || p.Subject == "" {
		return false
	}
	if (a.Method != "" && a.Method != p.Method) || (a.Issuer != "" && a.Issuer != p.Issuer) ||
		(a.Subject != "" && a.Subject != p.Subject) {
		return false
	}
	for k, want := range a.Claims {
		if !claimHolds(p.Claims[k], want) {
			return false
		}
	}
	return true
}

func claimHolds(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case []any:
		return slices.ContainsFunc(v, func(e any) bool { s, ok := e.(string); return ok && s == want })
	case []string:
		return slices.Contains(v, want)
	}
	return false
}

// Rule is who may approve: one of Approvers, signed in with a credential
// the front end still accepts (SignedIn), and, unless AllowSelf, not the
// principal that made the call (separation of duties).
type Rule struct {
	Approvers []Approver
	AllowSelf bool
	// SignedIn reports whether p still holds the credential it signed in
	// with (an approver token still loaded: ClaimCredential), so that a
	// removed credential ends its sign-ins at once rather than when their
	// cookies expire. Nil: every principal's sign-in holds (OIDC sign-ins
	// carry no credential the front end could check again).
	SignedIn func(p *abi.Principal) bool
}

// ClaimCredential is the claim in which a front end's sign-in carries a
// fingerprint of the credential it used (never the credential itself),
// for Rule.SignedIn to check against the credentials loaded now. Desk
// keeps it out of what it stores and records.
const ClaimCredential = "gatehost_credential"

// Check validates the rule's approvers.
func (r Rule) Check() error {
	for i, a := range r.Approvers {
		if err := a.Check(); err != nil {
			return fmt.Errorf("approvers[%d]: %w", i, err)
		}
	}
	return nil
}

// MayApprove reports whether p is an approver at all (ErrNotApprover),
// signed in with a credential still accepted (ErrNotApprover too). With no
// approvers configured nobody is.
func (r Rule) MayApprove(p *abi.Principal) error {
	if !slices.ContainsFunc(r.Approvers, func(a Approver) bool { return a.Matches(p) }) {
		return ErrNotApprover
	}
	if r.SignedIn != nil && !r.SignedIn(p) {
		return fmt.Errorf("%w: the credential it signed in with is no longer accepted", ErrNotApprover)
	}
	return nil
}

// MayDecide reports whether p may decide req: ErrNotApprover,
// ErrSelfApproval.
func (r Rule) MayDecide(p *abi.Principal, req Request) error {
	if err := r.MayApprove(p); err != nil {
		return err
	}
	if !r.AllowSelf && SamePrincipal(p, req.Caller) {
		return ErrSelfApproval
	}
	return nil
}

// withoutCredential is p without ClaimCredential: what is stored and
// recorded of an approver.
func withoutCredential(p *abi.Principal) *abi.Principal {
	if p == nil {
		return nil
	}
	if _, ok := p.Claims[ClaimCredential]; !ok {
		return p
	}
	q := *p
	q.Claims = maps.Clone(p.Claims)
	delete(q.Claims, ClaimCredential)
	if len(q.Claims) == 0 {
		q.Claims = nil
	}
	return &q
}

// SamePrincipal reports whether a and b are one principal: the same
// issuer and subject. A principal the front end could not name (nil) is
// nobody's, so it matches nothing.
func SamePrincipal(a, b *abi.Principal) bool {
	return a != nil && b != nil && a.Subject != "" && a.Issuer == b.Issuer && a.Subject == b.Subject
}

// PrincipalName is how a principal is written in logs and on the page:
// method:issuer/subject.
func PrincipalName(p *abi.Principal) string {
	if p == nil {
		return ""
	}
	if p.Issuer == "" {
		return p.Method + ":" + p.Subject
	}
	return p.Method + ":" + p.Issuer + "/" + p.Subject
}
