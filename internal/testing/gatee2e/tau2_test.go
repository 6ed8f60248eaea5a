package gatee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/preconditions"
)

// The swapSource of preconditions_test.go answers for a tau2 domain too:
// these make it apply overlays (dry mode) and name its collections (views
// made for view-less capabilities), as the Documents it holds do.

func (s *swapSource) WithOverlay(ctx context.Context, effects []abi.Effect) (datasource.DataSource, error) {
	return s.p.Load().WithOverlay(ctx, effects)
}

func (s *swapSource) Collections() []string { return s.p.Load().Collections() }

// tau2Domain is one tau2 domain as gatehost.yaml configures it: its catalog,
// its shipped data, and a rig whose source can be set to any state (the
// shipped data, or the data after earlier writes of a plan).
type tau2Domain struct {
	name string
	cat  *domain.Catalog
	base *datasource.Documents
	src  *swapSource
	rig  *pcRig
}

// tau2DomainConfig is a domain of gatehost.yaml's domains: section.
type tau2DomainConfig struct {
	Catalog string `yaml:"catalog"`
	Source  struct {
		Kind        string            `yaml:"kind"`
		Path        string            `yaml:"path"`
		Collections map[string]string `yaml:"collections"`
		Keys        map[string]string `yaml:"keys"`
	} `yaml:"source"`
}

// gatehostDomains reads the domains: section of gatehost.yaml.
func gatehostDomains(t testing.TB) map[string]tau2DomainConfig {
	t.Helper()
	var cfg struct {
		Domains map[string]tau2DomainConfig `yaml:"domains"`
	}
	require.NoError(t, yaml.Unmarshal(hosttest.ReadFile(t, "gatehost.yaml"), &cfg))
	return cfg.Domains
}

// openTau2Domain opens domain name the way gatehost.yaml's domains: builds
// it (documents source, one file or one file per collection, declared keys)
// and a rig at clock now over it.
func openTau2Domain(t testing.TB, name string, now time.Time) *tau2Domain {
	t.Helper()
	dc, ok := gatehostDomains(t)[name]
	require.True(t, ok, "gatehost.yaml has no domain %s", name)
	require.Contains(t, []string{"", "documents"}, dc.Source.Kind, "domain %s: the tau2 harness reads documents sources", name)
	var opts []datasource.DocumentsOption
	if len(dc.Source.Keys) > 0 {
		opts = append(opts, datasource.WithKeys(dc.Source.Keys))
	}
	var base *datasource.Documents
	var err error
	if dc.Source.Path != "" {
		base, err = datasource.OpenDocuments(filepath.Join(repoRoot, dc.Source.Path), opts...)
	} else {
		files := map[string]string{}
		for c, p := range dc.Source.Collections {
			files[c] = filepath.Join(repoRoot, p)
		}
		base, err = datasource.OpenCollections(files, opts...)
	}
	require.NoError(t, err)
	d := &tau2Domain{name: name, cat: hosttest.LoadCatalog(t, dc.Catalog), base: base, src: &swapSource{}}
	d.src.p.Store(base)
	d.rig = newPCRig(t, now, map[string]host.Domain{name: {Catalog: d.cat, Source: d.src}})
	return d
}

// at checks subject with the domain's data in state (nil: as shipped).
func (d *tau2Domain) at(t testing.TB, state *datasource.Documents, kind abi.SubjectKind, subject []byte) result {
	t.Helper()
	if state == nil {
		state = d.base
	}
	d.src.p.Store(state)
	defer d.src.p.Store(d.base)
	return d.rig.check(t, d.name, kind, subject)
}

// dryEffects returns the resolved effects the dry-mode evidence reports
// for each call of a proposal (nil for a call without any).
func dryEffects(t testing.TB, r result) [][]abi.Effect {
	t.Helper()
	checked, _ := r.Evidence["checked"].([]any)
	out := make([][]abi.Effect, len(checked))
	for i, c := range checked {
		ev, _ := c.(map[string]any)
		if ev["effects_truncated"] == true {
			t.Fatalf("call %d: more effects than the evidence lists", i)
		}
		b, err := json.Marshal(ev["effects"])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &out[i]))
	}
	return out
}

// stateAfter is the domain's data after the effects of calls [0, n).
func (d *tau2Domain) stateAfter(t testing.TB, effects [][]abi.Effect, n int) *datasource.Documents {
	t.Helper()
	var all []abi.Effect
	for _, e := range effects[:n] {
		all = append(all, e...)
	}
	if len(all) == 0 {
		return d.base
	}
	s, err := d.base.Apply(all)
	require.NoError(t, err)
	return s
}

// byAction groups a proposal's findings by action index.
func byAction(r result) map[int][]abi.Finding {
	out := map[int][]abi.Finding{}
	for _, f := range r.Findings {
		i := -1
		if f.ActionIndex != nil {
			i = *f.ActionIndex
		}
		out[i] = append(out[i], f)
	}
	return out
}

// failedAs reports the precondition ids of findings, each as id (failed)
// or unevaluable:id, and the codes of findings without one.
func failedAs(fs []abi.Finding) []string {
	return result{Findings: fs}.failedIDs()
}

// tau2Variant is one entry of a variants.yaml (docs/DOMAINS-TAU2.md).
type tau2Variant struct {
	Name   string `yaml:"name"`
	Policy string `yaml:"policy"`
	Calls  []struct {
		Tool       string         `yaml:"tool"`
		Parameters map[string]any `yaml:"parameters"`
	} `yaml:"calls"`
	Want        string   `yaml:"want"`
	Deny        []string `yaml:"deny"`
	Unevaluable bool     `yaml:"unevaluable"`
}

type tau2VariantFile struct {
	Now      string        `yaml:"now"`
	Variants []tau2Variant `yaml:"variants"`
}

// variantFiles lists testdata/domains/*/variants.yaml by domain (the
// directory's name).
func variantFiles(t testing.TB) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "testdata/domains/*/variants.yaml"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range paths {
		out[filepath.Base(filepath.Dir(p))] = p
	}
	return out
}

func (v tau2Variant) toolCalls(t testing.TB) []abi.ToolCall {
	t.Helper()
	var out []abi.ToolCall
	for i, c := range v.Calls {
		p, err := json.Marshal(c.Parameters)
		require.NoError(t, err)
		out = append(out, abi.ToolCall{ID: fmt.Sprintf("%s-%d", v.Name, i), Tool: c.Tool, Parameters: p})
	}
	return out
}

// assertWant checks one outcome of a variant: for deny, every expected id
// among the findings, as a failed precondition (or an unevaluable one when
// the entry says so); for admit, no finding.
func assertWant(t *testing.T, v tau2Variant, how string, fs []abi.Finding) bool {
	t.Helper()
	got := failedAs(fs)
	if v.Want == "admit" {
		return assert.Empty(t, got, "%s: want admitted", how)
	}
	ok := assert.NotEmpty(t, got, "%s: want denied", how)
	for _, id := range v.Deny {
		want := id
		if v.Unevaluable {
			want = "unevaluable:" + id
		}
		ok = assert.Contains(t, got, want, "%s: want %s among the findings", how) && ok
	}
	for _, f := range fs {
		ok = assert.NotEmpty(t, f.Message, "%s: a finding without a message", how) && ok
	}
	return ok
}

// TestTau2Variants checks every variants.yaml under testdata/domains: each
// variant's last call must be denied with its precondition ids, or
// admitted, natively and in wasm. One call: as a tool_call (execute) and as
// a one-action proposal (dry). Several: all as one proposal (dry: every
// earlier call admitted, its effects seen by the later ones), and the last
// alone as a tool_call against the data after the earlier calls' effects.
func TestTau2Variants(t *testing.T) {
	files := variantFiles(t)
	require.Contains(t, files, "retail")
	require.Contains(t, files, "airline")
	total := map[string]int{}
	for _, dom := range slices.Sorted(maps.Keys(files)) {
		var vf tau2VariantFile
		b, err := os.ReadFile(files[dom])
		require.NoError(t, err)
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		require.NoError(t, dec.Decode(&vf), files[dom])
		now := airlineNow
		if vf.Now != "" {
			now, err = time.Parse(time.RFC3339, vf.Now)
			require.NoError(t, err, "%s: now", files[dom])
		}
		d := openTau2Domain(t, dom, now)
		names := map[string]bool{}
		counts := map[string]int{}
		ids := map[string]bool{}
		for _, v := range vf.Variants {
			require.False(t, names[v.Name], "%s: variant %s twice", dom, v.Name)
			names[v.Name] = true
			require.Contains(t, []string{"deny", "admit"}, v.Want, "%s: %s", dom, v.Name)
			require.NotEmpty(t, v.Calls, "%s: %s", dom, v.Name)
			require.NotEmpty(t, v.Policy, "%s: %s: policy", dom, v.Name)
			if v.Want == "deny" {
				require.NotEmpty(t, v.Deny, "%s: %s: a deny variant names its precondition ids", dom, v.Name)
			} else {
				require.Empty(t, v.Deny, "%s: %s", dom, v.Name)
			}
			t.Run(dom+"/"+v.Name, func(t *testing.T) {
				calls := v.toolCalls(t)
				last := calls[len(calls)-1]
				lastTC, err := json.Marshal(last)
				require.NoError(t, err)
				dry := d.at(t, nil, abi.SubjectProposal, proposal(t, calls...))
				found := byAction(dry)
				for i := range calls[:len(calls)-1] {
					assert.Empty(t, failedAs(found[i]), "plan call %d (%s) must be admitted", i, calls[i].Tool)
				}
				assert.Empty(t, found[-1], "findings without an action index")
				ok := assertWant(t, v, "dry", found[len(calls)-1])
				state := d.stateAfter(t, dryEffects(t, dry), len(calls)-1)
				exec := d.at(t, state, abi.SubjectToolCall, lastTC)
				ok = assertWant(t, v, "execute", exec.Findings) && ok
				if ok {
					counts[v.Want]++
				}
			})
			for _, id := range v.Deny {
				ids[id] = true
			}
		}
		t.Logf("%s: %d variants, %d denied as expected, %d admitted as expected; precondition ids denied: %d",
			dom, len(vf.Variants), counts["deny"], counts["admit"], len(ids))
		total["deny"] += counts["deny"]
		total["admit"] += counts["admit"]
		if dom == "retail" || dom == "airline" {
			// Every write guard of the catalog is broken by some variant.
			for _, name := range d.cat.Capabilities() {
				c, _ := d.cat.Capability(name)
				for _, p := range c.Preconditions {
					assert.True(t, ids[p.ID], "%s: no variant breaks %s of %s", dom, p.ID, c.Name)
				}
			}
		}
	}
	t.Logf("all domains: %d rule-breaking variants denied, %d legal variants admitted", total["deny"], total["admit"])
}

// tau2Action is one expected action of a tau2 task.
type tau2Action struct {
	ActionID  string          `json:"action_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Requestor is "user" for the actions the simulated user takes on
	// their own device (telecom); they are not the agent's calls.
	Requestor string `json:"requestor"`
}

type tau2Task struct {
	ID                 string `json:"id"`
	EvaluationCriteria *struct {
		Actions []tau2Action `json:"actions"`
	} `json:"evaluation_criteria"`
}

// tau2Exceptions are the expected writes of tau2 tasks that the gate
// denies, keyed "domain task action_id", each with the precondition ids it
// is denied with (dry and execute alike) and why the denial is right.
var tau2Exceptions = map[string]struct {
	ids []string
	why string
}{
	// The task's expected actions first try an exchange on order #W7464385,
	// which is pending, not delivered; tau2's own tool refuses it ("Non-
	// delivered order cannot be exchanged") and the next expected action
	// modifies the pending order instead. An exchange of a pending order
	// breaks "Exchange delivered order" on any state.
	"retail 64 64_6": {[]string{"order_is_delivered"}, "exchange of a pending order"},
	// The expected exchange on order #W4316152 changes two tea kettles
	// bought at 94.80 each for 101.12 and 109.58, a total difference of
	// 21.10, paid from gift_card_7245904, whose balance is 17.00. Each
	// difference alone is within it; their sum is not. tau2's own tool sums
	// the differences and refuses it ("Insufficient gift card balance to
	// pay for the price difference"), as "Exchange delivered order" says.
	"retail 105 106_0": {[]string{"gift_card_covers_difference"}, "gift card balance below the total difference"},
}

// TestTau2Tasks checks every expected write of each tau2 task: all of a
// task's writes, in order, as one proposal (dry mode, each write checked
// against the effects of the earlier ones), and each write alone as a
// tool_call (execute) against the data those earlier writes leave
// (Documents.Apply of the effects the dry run reports). Both must admit
// every write but the documented exceptions.
func TestTau2Tasks(t *testing.T) {
	doms := []string{"retail", "airline"}
	if _, err := os.Stat(filepath.Join(repoRoot, "testdata/domains/telecom/tasks.json")); err == nil {
		doms = append(doms, "telecom")
	}
	seen := map[string]bool{}
	for _, dom := range doms {
		d := openTau2Domain(t, dom, airlineNow)
		var tasks []tau2Task
		require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, "testdata/domains/"+dom+"/tasks.json"), &tasks))
		var nTasks, writes, dryOK, execOK int
		for _, task := range tasks {
			if task.EvaluationCriteria == nil {
				continue
			}
			var calls []abi.ToolCall
			for _, a := range task.EvaluationCriteria.Actions {
				if a.Requestor == "user" {
					continue
				}
				c, ok := d.cat.Capability(a.Name)
				require.True(t, ok, "task %s: %s is not in the %s catalog", task.ID, a.Name, dom)
				if abi.IsWriteKind(c.Kind) {
					calls = append(calls, abi.ToolCall{ID: a.ActionID, Tool: a.Name, Parameters: a.Arguments})
				}
			}
			if len(calls) == 0 {
				continue
			}
			nTasks++
			writes += len(calls)
			dry := d.at(t, nil, abi.SubjectProposal, proposal(t, calls...))
			found := byAction(dry)
			assert.Empty(t, found[-1], "task %s: findings without an action index", task.ID)
			effects := dryEffects(t, dry)
			for i, c := range calls {
				key := fmt.Sprintf("%s %s %s", dom, task.ID, c.ID)
				exc, isExc := tau2Exceptions[key]
				seen[key] = isExc
				gotDry := failedAs(found[i])
				tc, err := json.Marshal(c)
				require.NoError(t, err)
				gotExec := failedAs(d.at(t, d.stateAfter(t, effects, i), abi.SubjectToolCall, tc).Findings)
				if isExc {
					assert.Equal(t, exc.ids, gotDry, "%s (%s): dry", key, exc.why)
					assert.Equal(t, exc.ids, gotExec, "%s (%s): execute", key, exc.why)
				} else {
					assert.Empty(t, gotDry, "%s %s: dry", key, c.Tool)
					assert.Empty(t, gotExec, "%s %s: execute", key, c.Tool)
				}
				if len(gotDry) == 0 {
					dryOK++
				}
				if len(gotExec) == 0 {
					execOK++
				}
			}
		}
		t.Logf("%s: %d tasks with writes, %d writes, %d admitted dry, %d admitted execute", dom, nTasks, writes, dryOK, execOK)
	}
	for key := range tau2Exceptions {
		assert.True(t, seen[key], "exception %s names no expected write", key)
	}
}

// TestTau2Examples keeps the domain examples of scripts/demo.sh deciding
// as the demo expects, against the catalogs and data of gatehost.yaml.
func TestTau2Examples(t *testing.T) {
	retail, airline := openTau2Domain(t, "retail", airlineNow), openTau2Domain(t, "airline", airlineNow)
	for _, c := range []struct {
		d    *tau2Domain
		file string
		kind abi.SubjectKind
		want []string
	}{
		{retail, "retail-cancel-processed.json", abi.SubjectProposal, []string{"order_is_pending"}},
		{retail, "retail-return-ok.json", abi.SubjectToolCall, []string{}},
		{retail, "retail-return-wrong-refund.json", abi.SubjectToolCall, []string{"refund_to_original_or_gift_card"}},
		{airline, "airline-basic-economy-change.json", abi.SubjectToolCall, []string{"basic_economy_flights_unchanged"}},
		{airline, "airline-cancel-plan.json", abi.SubjectProposal, []string{"bags_not_removed"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := c.d.at(t, nil, c.kind, hosttest.ReadFile(t, "testdata/domains/examples/"+c.file))
			assert.Equal(t, c.want, r.failedIDs())
			if len(c.want) > 0 {
				assert.Equal(t, abi.Rejected, r.Verdict)
				assert.Equal(t, preconditions.CodeFailed, r.Findings[0].Code)
			}
		})
	}
}
