package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// Fixture is a policy test file (gatehost policy test): a catalog, the
// policy files, and cases, each a call by a principal with the verdict and
// determining policies expected. Paths are relative to the fixture file.
type Fixture struct {
	Catalog  FixtureCatalog    `json:"catalog"`
	Policies []string          `json:"policies"`
	Claims   map[string]string `json:"claims,omitempty"`
	// Windows declares the counting windows the policies read in
	// context.session (Options.Windows).
	Windows []string `json:"windows,omitempty"`
	// ToolIDs are the catalog's tool ids, set by the caller before Run:
	// every count of a case names each (0 unless the case says).
	ToolIDs []string `json:"-"`
	// Now is the clock of every case without its own; default
	// 2026-01-01T00:00:00Z.
	Now   string `json:"now,omitempty"`
	Cases []Case `json:"cases"`
}

// FixtureCatalog names the catalog file the way gatehost catalog diff
// does: a path, its format (default: detect) and the MCP server its tools
// come from.
type FixtureCatalog struct {
	Path   string `json:"path"`
	Format string `json:"format,omitempty"`
	Server string `json:"server,omitempty"`
}

// Case is one call and what the policies must decide.
type Case struct {
	Name string `json:"name"`
	// Principal is the caller; absent is anonymous.
	Principal *abi.Principal `json:"principal,omitempty"`
	Call      abi.ToolCall   `json:"call"`
	Now       string         `json:"now,omitempty"`
	// Counts are the counts of the call's session and principal
	// (context.session); absent, every count is 0.
	Counts *CaseCounts `json:"counts,omitempty"`
	// CountersUnavailable evaluates the call as when the host's counts
	// cannot be read.
	CountersUnavailable bool   `json:"counters_unavailable,omitempty"`
	Expect              Expect `json:"expect"`
}

// Expect is a case's expected answer.
// CaseCounts are a case's counts, each by tool (a wire name, alias or id
// of the catalog): calls in the session, and per declared window the
// session's and the principal's.
type CaseCounts struct {
	Calls     map[string]int64            `json:"calls,omitempty"`
	Windows   map[string]map[string]int64 `json:"windows,omitempty"`
	Principal map[string]map[string]int64 `json:"principal,omitempty"`
}

type Expect struct {
	// Verdict is accepted, rejected or inconclusive.
	Verdict abi.Verdict `json:"verdict"`
	// Policies are the determining policies' ids, in any order; absent
	// is not checked, [] is none.
	Policies *[]string `json:"policies,omitempty"`
	// Code, when given, is the code of a finding the answer must carry.
	Code string `json:"code,omitempty"`
}

// DefaultNow is a fixture's clock when it gives none.
const DefaultNow = "2026-01-01T00:00:00Z"

// FixtureError is a fixture file that does not decode or is incomplete.
type FixtureError struct{ Err error }

func (e *FixtureError) Error() string { return "policy fixture: " + e.Err.Error() }
func (e *FixtureError) Unwrap() error { return e.Err }

// DecodeFixture decodes a fixture strictly: unknown keys, a missing
// catalog, policy or case, an unnamed or duplicate case, an unknown
// verdict, a case without a tool or an unparsable clock are errors.
func DecodeFixture(data []byte) (*Fixture, error) {
	var f Fixture
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, &FixtureError{Err: err}
	}
	if dec.More() {
		return nil, &FixtureError{Err: errors.New("data after the fixture object")}
	}
	switch {
	case f.Catalog.Path == "":
		return nil, &FixtureError{Err: errors.New("catalog.path: required")}
	case len(f.Policies) == 0:
		return nil, &FixtureError{Err: errors.New("policies: name at least one policy file")}
	case len(f.Cases) == 0:
		return nil, &FixtureError{Err: errors.New("cases: give at least one")}
	}
	if f.Now == "" {
		f.Now = DefaultNow
	}
	if _, err := time.Parse(time.RFC3339Nano, f.Now); err != nil {
		return nil, &FixtureError{Err: fmt.Errorf("now: %w", err)}
	}
	for name, t := range f.Claims {
		if _, err := ParseClaimType(t); err != nil {
			return nil, &FixtureError{Err: fmt.Errorf("claims.%s: %w", name, err)}
		}
	}
	windows, err := windowNames(f.Windows)
	if err != nil {
		return nil, &FixtureError{Err: fmt.Errorf("windows: %w", err)}
	}
	seen := map[string]bool{}
	for i, c := range f.Cases {
		if err := c.Counts.check(windows); err != nil {
			return nil, &FixtureError{Err: fmt.Errorf("cases[%d] (%s).counts: %w", i, c.Name, err)}
		}
		where := fmt.Sprintf("cases[%d]", i)
		switch {
		case c.Name == "":
			return nil, &FixtureError{Err: fmt.Errorf("%s.name: required", where)}
		case seen[c.Name]:
			return nil, &FixtureError{Err: fmt.Errorf("%s.name: %q names another case too", where, c.Name)}
		case c.Call.Tool == "":
			return nil, &FixtureError{Err: fmt.Errorf("%s (%s).call.tool: required", where, c.Name)}
		case !c.Expect.Verdict.Valid():
			return nil, &FixtureError{Err: fmt.Errorf("%s (%s).expect.verdict: %q is not accepted, rejected or inconclusive", where, c.Name, c.Expect.Verdict)}
		case c.Principal != nil && c.Principal.Subject == "":
			return nil, &FixtureError{Err: fmt.Errorf("%s (%s).principal.subject: required (omit principal for an anonymous caller)", where, c.Name)}
		}
		if c.Now != "" {
			if _, err := time.Parse(time.RFC3339Nano, c.Now); err != nil {
				return nil, &FixtureError{Err: fmt.Errorf("%s (%s).now: %w", where, c.Name, err)}
			}
		}
		seen[c.Name] = true
	}
	return &f, nil
}

// ClaimOptions are the fixture's declared claims as Options.
func (f *Fixture) ClaimOptions() Options {
	o := Options{Claims: map[string]ClaimType{}, Windows: f.Windows}
	for n, t := range f.Claims {
		o.Claims[n], _ = ParseClaimType(t) // checked by DecodeFixture
	}
	return o
}

// CaseResult is one case's outcome.
type CaseResult struct {
	Name     string      `json:"name"`
	Pass     bool        `json:"pass"`
	Verdict  abi.Verdict `json:"verdict"`
	Policies []string    `json:"policies"`
	Codes    []string    `json:"codes,omitempty"`
	// Failure says what differed.
	Failure string `json:"failure,omitempty"`
}

// Lookup finds a catalog tool by wire name, alias or id.
type Lookup func(name string) (abi.Tool, bool)

// UnknownTool is the answer about a call of a tool the catalog does not
// hold: rejected, since no policy can name it.
func UnknownTool() abi.Response {
	return abi.Response{Verdict: abi.Rejected, Findings: []abi.Finding{{
		Code: CodeUnknownTool, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
		Message: "the catalog holds no tool by this name, so no policy permits it",
	}}}
}

// CodeUnknownTool is the finding on a call of a tool not in the catalog.
const CodeUnknownTool = "unknown_tool"

// Run runs the fixture's cases with eng, looking tools up with lookup.
func (f *Fixture) Run(eng *Engine, lookup Lookup) []CaseResult {
	out := make([]CaseResult, 0, len(f.Cases))
	for _, c := range f.Cases {
		now := c.Now
		if now == "" {
			now = f.Now
		}
		ts, _ := time.Parse(time.RFC3339Nano, now) // checked by DecodeFixture
		var resp abi.Response
		policies := []string{}
		if tool, ok := lookup(c.Call.Tool); ok {
			var counts *Counts
			if !c.CountersUnavailable {
				counts = c.Counts.answer(f.ToolIDs, eng.windows, lookup)
			}
			r := eng.Evaluate(Call{Tool: tool, Arguments: c.Call.Parameters, Principal: c.Principal, Now: ts, Counts: counts})
			resp = r.Response()
			policies = append(policies, r.IDs()...)
		} else {
			resp = UnknownTool()
		}
		cr := CaseResult{Name: c.Name, Verdict: resp.Verdict, Policies: policies, Pass: true}
		for _, fd := range resp.Findings {
			cr.Codes = append(cr.Codes, fd.Code)
		}
		var why []string
		if p := c.Counts.problem(lookup); p != "" {
			// Counted as 0, or as either of two, it would pass a case
			// meant to fail.
			why = append(why, p)
		}
		if resp.Verdict != c.Expect.Verdict {
			why = append(why, fmt.Sprintf("verdict %s, want %s", resp.Verdict, c.Expect.Verdict))
		}
		if c.Expect.Policies != nil {
			want := slices.Clone(*c.Expect.Policies)
			sort.Strings(want)
			if !slices.Equal(want, policies) {
				why = append(why, fmt.Sprintf("policies %q, want %q", policies, want))
			}
		}
		if c.Expect.Code != "" && !slices.Contains(cr.Codes, c.Expect.Code) {
			why = append(why, fmt.Sprintf("finding codes %q, want one %q", cr.Codes, c.Expect.Code))
		}
		if len(why) > 0 {
			cr.Pass = false
			cr.Failure = fmt.Sprint(why)
		}
		out = append(out, cr)
	}
	return out
}

// check refuses counts of a window the fixture does not declare.
func (c *CaseCounts) check(declared []string) error {
	if c == nil {
		return nil
	}
	for _, m := range []map[string]map[string]int64{c.Windows, c.Principal} {
		for w := range m {
			n, err := windowNames([]string{w})
			if err != nil {
				return err
			}
			if !slices.Contains(declared, n[0]) {
				return fmt.Errorf("window %s is not one of the fixture's windows", w)
			}
		}
	}
	return nil
}

// problem is what makes c's counts ambiguous, or "": a tool name lookup
// does not know, or two keys naming one tool (a wire name and its id) or
// one window ("1h" and "60m"), whichever answer would depend on map order.
func (c *CaseCounts) problem(lookup Lookup) string {
	if c == nil {
		return ""
	}
	var out []string
	tools := func(where string, m map[string]int64) {
		seen := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			t, ok := lookup(name)
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("counts name %q, which is no tool of the catalog", name))
			case seen[t.ID] != "":
				out = append(out, fmt.Sprintf("counts%s name %s twice, as %q and %q", where, t.ID, seen[t.ID], name))
			default:
				seen[t.ID] = name
			}
		}
	}
	tools("", c.Calls)
	for _, m := range []map[string]map[string]int64{c.Windows, c.Principal} {
		seen := map[string]string{}
		for _, w := range slices.Sorted(maps.Keys(m)) {
			n, err := windowNames([]string{w})
			if err == nil && seen[n[0]] != "" {
				out = append(out, fmt.Sprintf("counts name window %s twice, as %q and %q", n[0], seen[n[0]], w))
			} else if err == nil {
				seen[n[0]] = w
			}
			tools(" of window "+w, m[w])
		}
	}
	if len(out) == 0 {
		return ""
	}
	return slices.Min(out)
}

// answer is the counters.get answer of c (nil: all 0) over the catalog's
// tool ids and the declared windows.
func (c *CaseCounts) answer(ids, windows []string, lookup Lookup) *Counts {
	fill := func(m map[string]int64) map[string]int64 {
		out := make(map[string]int64, len(ids))
		for _, id := range ids {
			out[id] = 0
		}
		for name, n := range m {
			if t, ok := lookup(name); ok {
				name = t.ID
			}
			out[name] = n
		}
		return out
	}
	byWindow := func(m map[string]map[string]int64) map[string]abi.CounterWindow {
		canon := map[string]map[string]int64{}
		for w, v := range m {
			if n, err := windowNames([]string{w}); err == nil {
				canon[n[0]] = v
			}
		}
		out := map[string]abi.CounterWindow{}
		for _, w := range windows {
			out[w] = abi.CounterWindow{Calls: fill(canon[w])}
		}
		return out
	}
	if c == nil {
		c = &CaseCounts{}
	}
	return &Counts{Calls: fill(c.Calls), Windows: byWindow(c.Windows), Principal: byWindow(c.Principal)}
}
