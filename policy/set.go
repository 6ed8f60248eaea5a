package policy

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go"
	cedarast "github.com/cedar-policy/cedar-go/ast"
	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/ast"
)

// Source is one Cedar policy document: its text and the name it is
// reported by (a file name; "" is "policy").
type Source struct {
	File string `json:"file,omitempty"`
	Text string `json:"text"`
}

// Policy is one parsed policy statement.
type Policy struct {
	// ID is the policy's @id annotation, or FILE:LINE:COLUMN without one.
	ID string
	// Message is its @message annotation: what a finding says when the
	// policy decides.
	Message string
	// Effect is "permit" or "forbid".
	Effect string
	File   string
	Line   int
	Column int

	cedar *cedar.Policy
	// actions is its action scope: nil for any action, else the actions
	// and groups of which the request's action must be one (==: exactly
	// it; in: it or one of its groups).
	actions []types.EntityUID
	in      bool
	// unscoped is the policy with its action scope dropped (action): what
	// it evaluates to for an action its scope holds for (forAction).
	unscoped *cedar.Policy
	src      int // index into Set.sources
	start    int // byte offset of the statement in its source
	end      int // byte offset where the next statement starts
}

// Set is a parsed set of policies with unique ids.
type Set struct {
	Policies []Policy
	byID     map[string]int
	ps       *cedar.PolicySet
	sources  []Source
	// session: some policy's text names session (UsesSession), found
	// once at parse: the texts do not change.
	session bool
}

// ParseError is a policy document Cedar could not parse.
type ParseError struct {
	File string
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s: %v", e.File, e.Err) }
func (e *ParseError) Unwrap() error { return e.Err }

// DuplicateIDError is two policies with the same @id.
type DuplicateIDError struct {
	ID          string
	First, Then string // FILE:LINE:COLUMN of each
}

func (e *DuplicateIDError) Error() string {
	return fmt.Sprintf("%s: policy id %q is also the id of the policy at %s", e.Then, e.ID, e.First)
}

func fileOf(s Source) string {
	if s.File == "" {
		return "policy"
	}
	return s.File
}

// Parse parses Cedar policy documents into one set. An empty set is
// valid: it permits nothing (Cedar's default deny).
func Parse(srcs []Source) (*Set, error) {
	s := &Set{byID: map[string]int{}, ps: cedar.NewPolicySet(), sources: srcs}
	for si, src := range srcs {
		file := fileOf(src)
		list, err := cedar.NewPolicyListFromBytes(file, []byte(src.Text))
		if err != nil {
			return nil, &ParseError{File: file, Err: err}
		}
		for i, p := range list {
			pos := p.Position()
			pol := Policy{File: file, Line: pos.Line, Column: pos.Column, cedar: p, src: si, start: pos.Offset, end: len(src.Text)}
			if i+1 < len(list) {
				pol.end = list[i+1].Position().Offset
			}
			pol.actions, pol.in = actionScope(p)
			pol.unscoped = p
			if pol.actions != nil {
				a := *(*ast.Policy)(p.AST())
				a.Action = ast.ScopeTypeAll{}
				pol.unscoped = cedar.NewPolicyFromAST((*cedarast.Policy)(&a))
			}
			pol.Effect = "permit"
			if p.Effect() == cedar.Forbid {
				pol.Effect = "forbid"
			}
			ann := p.Annotations()
			pol.ID = string(ann[types.Ident("id")])
			pol.Message = string(ann[types.Ident("message")])
			if pol.ID == "" {
				pol.ID = pol.Where()
			}
			if j, dup := s.byID[pol.ID]; dup {
				return nil, &DuplicateIDError{ID: pol.ID, First: s.Policies[j].Where(), Then: pol.Where()}
			}
			s.byID[pol.ID] = len(s.Policies)
			s.Policies = append(s.Policies, pol)
			s.ps.Add(cedar.PolicyID(pol.ID), p)
			if t, _ := s.text(pol); strings.Contains(t, "session") {
				s.session = true
			}
		}
	}
	return s, nil
}

// actionScope is a policy's action scope: nil for unconstrained (action),
// the one entity of action == E (in false), the entities of action in E
// and action in [E1, E2] (in true).
func actionScope(p *cedar.Policy) ([]types.EntityUID, bool) {
	switch sc := (*ast.Policy)(p.AST()).Action.(type) {
	case ast.ScopeTypeEq:
		return []types.EntityUID{sc.Entity}, false
	case ast.ScopeTypeIn:
		return []types.EntityUID{sc.Entity}, true
	case ast.ScopeTypeInSet:
		return append([]types.EntityUID{}, sc.Entities...), true
	}
	return nil, false // ScopeTypeAll, or a scope this code does not know: kept
}

// scopeHolds reports whether the policy's action scope holds for a
// request whose action is action, in exactly the groups parents (as the
// engine's entities make it: the groups have no parents of their own). A
// policy for which it is false evaluates to false without an error:
// Cedar evaluates the scope before the conditions, and a scope cannot err.
func (p Policy) scopeHolds(action types.EntityUID, parents []types.EntityUID) bool {
	if p.actions == nil {
		return true
	}
	for _, a := range p.actions {
		if a == action || p.in && slices.Contains(parents, a) {
			return true
		}
	}
	return false
}

// policyList is policies in parse order, a cedar.PolicyIterator.
type policyList []listed

type listed struct {
	id cedar.PolicyID
	p  *cedar.Policy
}

// All iterates over the policies in order.
func (l policyList) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] {
	return func(yield func(cedar.PolicyID, *cedar.Policy) bool) {
		for _, x := range l {
			if !yield(x.id, x.p) {
				return
			}
		}
	}
}

// forAction is the policies whose action scope holds for action in the
// groups parents, each without its action scope (which would only test
// again what is known): authorizing a request of that action against them
// decides as against the whole set (the others are false, and err not).
func (s *Set) forAction(action types.EntityUID, parents []types.EntityUID) policyList {
	var l policyList
	for _, p := range s.Policies {
		if p.scopeHolds(action, parents) {
			l = append(l, listed{id: cedar.PolicyID(p.ID), p: p.unscoped})
		}
	}
	return l
}

// Where is FILE:LINE:COLUMN of the statement.
func (p Policy) Where() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column) }

// Get returns the policy with the id.
func (s *Set) Get(id string) (Policy, bool) {
	i, ok := s.byID[id]
	if !ok {
		return Policy{}, false
	}
	return s.Policies[i], true
}

// text is the statement's source text and the offset it starts at.
func (s *Set) text(p Policy) (string, int) {
	t := s.sources[p.src].Text
	return t[p.start:min(p.end, len(t))], p.start
}

// position turns a byte offset of source src into a line and column
// (columns count runes, from 1).
func (s *Set) position(src, off int) (line, col int) {
	t := s.sources[src].Text[:off]
	line = strings.Count(t, "\n") + 1
	col = len([]rune(t[strings.LastIndexByte(t, '\n')+1:])) + 1
	return line, col
}

// UsesSession reports whether some policy's text names session (as in
// context.session): such a set cannot be decided without the counters, and
// a call is then inconclusive, never decided as if every count were 0. A
// mention in a comment or a string counts too: the test errs toward
// failing closed.
func (s *Set) UsesSession() bool { return s.session }
