package approval

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/editdist"
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

// ErrApproverMatchesNobody: an approver no principal of the configured
// sign-ins can match (ApproverError), so nobody it was meant for can
// ever approve.
var ErrApproverMatchesNobody = errors.New("approval: an approver matches no principal that can sign in")

// A SignIn is one way approvers sign in (approver tokens, an OIDC
// provider): each principal it yields has Method and Issuer, a subject
// among Subjects (nil: any) and claims among Claims.
type SignIn struct {
	// Name is how the operator configures it, for messages: "the
	// approver tokens", "approvals.page.oidc".
	Name           string
	Method, Issuer string
	Subjects       []string
	Claims         []string
}

// ApproverError is approver Index of a rule, which no principal of the
// configured sign-ins matches: Field ("method", "issuer", "subject" or
// "claims") is the first whose Value rules every sign-in out, with the
// value closest to it. It wraps ErrApproverMatchesNobody.
type ApproverError struct {
	Index        int
	Field, Value string
	Reason       string
	Suggestion   string
}

func (e *ApproverError) Error() string {
	msg := fmt.Sprintf("approvers[%d].%s: %q: %s", e.Index, e.Field, e.Value, e.Reason)
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

func (e *ApproverError) Unwrap() error { return ErrApproverMatchesNobody }

// CheckSignIns reports the first approver that no principal of ins can
// match (*ApproverError): a name in it that no sign-in has is a typo, and
// the approver it meant could never approve.
func (r Rule) CheckSignIns(ins []SignIn) error {
	for i, a := range r.Approvers {
		if err := a.checkSignIns(ins); err != nil {
			err.Index = i
			return err
		}
	}
	return nil
}

func (a Approver) checkSignIns(ins []SignIn) *ApproverError {
	c := ins
	narrow := func(field, value string, keep func(SignIn) bool, of func(SignIn) []string, reason string) *ApproverError {
		var kept []SignIn
		var values []string
		for _, in := range c {
			if keep(in) {
				kept = append(kept, in)
			}
			values = append(values, of(in)...)
		}
		if len(kept) > 0 {
			c = kept
			return nil
		}
		e := &ApproverError{Field: field, Value: value, Reason: reason}
		e.Suggestion, _ = editdist.Closest(value, values)
		return e
	}
	one := func(f func(SignIn) string) func(SignIn) []string {
		return func(in SignIn) []string { return []string{f(in)} }
	}
	if a.Method != "" {
		if e := narrow("method", a.Method, func(in SignIn) bool { return in.Method == a.Method },
			one(func(in SignIn) string { return in.Method }), "no approver signs in with it ("+describe(c, func(in SignIn) string { return in.Method })+")"); e != nil {
			return e
		}
	}
	if a.Issuer != "" {
		if e := narrow("issuer", a.Issuer, func(in SignIn) bool { return in.Issuer == a.Issuer },
			one(func(in SignIn) string { return in.Issuer }), "no approver signs in with it ("+describe(c, func(in SignIn) string { return strconv.Quote(in.Issuer) })+")"); e != nil {
			return e
		}
	}
	if a.Subject != "" {
		names := make([]string, len(c))
		for i, in := range c {
			names[i] = in.Name
		}
		if e := narrow("subject", a.Subject, func(in SignIn) bool { return in.Subjects == nil || slices.Contains(in.Subjects, a.Subject) },
			func(in SignIn) []string { return in.Subjects }, "none of "+strings.Join(names, " and ")+" is named so"); e != nil {
			return e
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.Claims)) {
		if e := narrow("claims", k, func(in SignIn) bool { return slices.Contains(in.Claims, k) },
			func(in SignIn) []string { return in.Claims }, "no approver signs in with this claim ("+describe(c, func(in SignIn) string {
				if len(in.Claims) == 0 {
					return "no claim"
				}
				return strings.Join(in.Claims, ", ")
			})+")"); e != nil {
			return e
		}
	}
	return nil
}

// describe says what each of ins has of a field: "the approver tokens:
// token; approvals.page.oidc: oidc", or that no sign-in is configured.
func describe(ins []SignIn, of func(SignIn) string) string {
	if len(ins) == 0 {
		return "no sign-in for approvers is configured"
	}
	parts := make([]string, len(ins))
	for i, in := range ins {
		parts[i] = in.Name + ": " + of(in)
	}
	return strings.Join(parts, "; ")
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
