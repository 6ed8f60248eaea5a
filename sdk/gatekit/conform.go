// Package gatekit is the conformance kit: Check runs a compiled gate module
// through the real host (package host: the same loader, sandbox, limits and
// fail-closed decisions an operator's gatehost uses) and checks what
// abi/SPEC.md asks of every gate, then the author's own cases. To run a
// gate's Go code natively in go test, without a WebAssembly runtime, use
// package sdk/gatetest.
package gatekit

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/engine"
	"github.com/gatehost/gatehost/internal/hostkit"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Like testing/slogtest, Check reports every failure, not only the first,
// each naming its check and case.

// Names of the checks, as Failure.Check and Result.Check.
const (
	CheckModule       = "module"        // imports, exports, memory (SPEC §2)
	CheckDescriptor   = "descriptor"    // descriptor valid, config schema compiles (§3.1, §5.2)
	CheckSubjectKinds = "subject_kinds" // every declared kind is handled
	CheckMalformed    = "malformed"     // malformed, empty, oversized requests → inconclusive
	CheckResponse     = "response"      // answers conform to response.schema.json
	CheckDeterminism  = "determinism"   // equal requests, equal answers (§3.2)
	CheckCapabilities = "capabilities"  // no ungranted or undeclared capability use (§7.6)
	CheckBudget       = "budget"        // within the stated time and memory budget
	CheckEvidence     = "evidence"      // accepted carries evidence (§5.4)
	CheckTrap         = "trap"          // never a trap (§5.4, Appendix A)
	CheckCase         = "case"          // the author's cases
)

// Defaults of Budget.
const (
	DefaultBudgetTime          = host.DefaultTimeout
	DefaultBudgetMemory        = host.DefaultMemoryLimit
	DefaultBudgetOversizedTime = 10 * time.Second
	// DefaultOversizedBytes is the default size of the oversized probes.
	DefaultOversizedBytes = 1 << 20
)

// Budget is what one evaluation may use. The kit runs every stage with it as
// the stage deadline and memory limit, as an operator would configure them.
type Budget struct {
	// Time per evaluation, creating a fresh instance included; default 1s.
	Time time.Duration
	// Memory is the linear memory limit in bytes; default 64 MiB.
	Memory uint64
	// OversizedTime is the time allowed for the oversized requests, which
	// check that a gate copes with a large request, not how fast it parses
	// one; default 10s (and never less than Time).
	OversizedTime time.Duration
}

// Options configures Check. The zero value checks a gate that needs no
// config against an empty catalog.
type Options struct {
	// Config is the stage config of the kit's own probes and of cases
	// without a config; nil means none.
	Config json.RawMessage
	// Budget is the time and memory every evaluation must stay within.
	Budget Budget
	// OversizedBytes is the size of the kit's oversized requests; default
	// DefaultOversizedBytes. The host sends subjects up to
	// host.MaxSubjectBytes (4 MiB): set that to check the full size.
	OversizedBytes int
	// Cases are the author's cases (see LoadCases).
	Cases []Case
	// Subjects replaces the kit's minimal valid subject of a kind, sent to
	// check that the kind is handled, deterministic and within budget.
	Subjects map[abi.SubjectKind]json.RawMessage
	// Host supplies what the gate's capabilities read: Catalog, Domains,
	// Policy, Checks, Sessions; and CacheDir, Logger. The kit sets Plugins,
	// Pipelines, PoolSize (1, so one instance serves request after request),
	// Quarantine (off) and Now (a fixed clock).
	Host host.Config
}

// Case is one of the author's cases: a subject, the stage config and grants
// it runs with, and the answer it must get. As a file, the JSON members
// below; unknown members are ignored.
type Case struct {
	// Name is the file name without .json; set by LoadCases.
	Name string `json:"-"`
	// Note says what the case shows.
	Note string `json:"note,omitempty"`
	// SubjectKind defaults to the gate's first declared kind.
	SubjectKind abi.SubjectKind `json:"subject_kind,omitempty"`
	Subject     json.RawMessage `json:"subject"`
	// Config replaces Options.Config for this case.
	Config json.RawMessage `json:"config,omitempty"`
	// Granted replaces the default grant (every declared capability the
	// host knows); [] grants none.
	Granted *[]string `json:"granted,omitempty"`
	// InvalidSubject: the host must refuse the subject before any stage
	// runs (it breaks the kind's schema).
	InvalidSubject bool `json:"invalid_subject,omitempty"`
	// WantVerdict is required (unless InvalidSubject).
	WantVerdict abi.Verdict `json:"want_verdict"`
	// WantReason, when set, is the reason an inconclusive answer must give.
	WantReason string `json:"want_reason,omitempty"`
	// WantCodes is the sorted multiset of finding codes; nil is not
	// checked, [] means no finding.
	WantCodes []string `json:"want_codes,omitempty"`
}

// MaxCaseBytes caps one case file; a case holds one subject and what to
// expect of it.
const MaxCaseBytes = 16 << 20

// LoadCases reads every *.json file of dir as a Case, sorted by name. Each
// must be a regular file (a named pipe is refused, not waited on) of at most
// MaxCaseBytes.
func LoadCases(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("gatekit: no *.json case files in %s", dir)
	}
	sort.Strings(files)
	out := make([]Case, 0, len(files))
	for _, f := range files {
		b, err := safefile.ReadFile(f, MaxCaseBytes)
		if err != nil {
			return nil, err
		}
		var c Case
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("gatekit: case %s: %w", f, err)
		}
		c.Name = strings.TrimSuffix(filepath.Base(f), ".json")
		if c.Subject == nil {
			return nil, fmt.Errorf("gatekit: case %s: subject: required", f)
		}
		if !c.InvalidSubject && !c.WantVerdict.Valid() {
			return nil, fmt.Errorf("gatekit: case %s: want_verdict: %q is not accepted, rejected or inconclusive", f, c.WantVerdict)
		}
		out = append(out, c)
	}
	return out, nil
}

// Failure is one conformance failure.
type Failure struct {
	Check  string // one of the Check* names
	Case   string // the probe or case it happened in; "" for the module as a whole
	Detail string
}

func (f Failure) Error() string {
	if f.Case == "" {
		return f.Check + ": " + f.Detail
	}
	return f.Check + ": " + f.Case + ": " + f.Detail
}

// Result is one request the kit sent and what came back.
type Result struct {
	Case     string        `json:"case"`
	Verdict  abi.Verdict   `json:"verdict"`
	Reason   string        `json:"reason,omitempty"`
	Codes    []string      `json:"codes"`
	Duration time.Duration `json:"duration_ns"`
	// Host is true when the host decided the stage (a trap, timeout, …).
	Host bool `json:"host_decided,omitempty"`
}

// Report is the outcome of Check.
type Report struct {
	SHA256     string            `json:"sha256"`
	Size       int               `json:"size"`
	Info       *ModuleInfo       `json:"module,omitempty"`
	Descriptor *abi.Descriptor   `json:"descriptor,omitempty"`
	Budget     Budget            `json:"budget"`
	Results    []Result          `json:"results"`
	Failures   []Failure         `json:"failures"`
	Checks     map[string]string `json:"checks"` // check name → "pass", "fail" or "skipped"
	// MaxDuration is the slowest evaluation, Slowest its case.
	MaxDuration time.Duration `json:"max_duration_ns"`
	Slowest     string        `json:"slowest"`
}

// Err joins every failure; nil when the module conforms.
func (r *Report) Err() error {
	errs := make([]error, len(r.Failures))
	for i, f := range r.Failures {
		errs[i] = f
	}
	return errors.Join(errs...)
}

func (r *Report) fail(check, name, format string, args ...any) {
	r.Failures = append(r.Failures, Failure{Check: check, Case: name, Detail: fmt.Sprintf(format, args...)})
}

// Run is Check for go test: it reads the module at wasmPath and reports each
// failure with t.Errorf, so that one run lists every problem.
func Run(t testing.TB, wasmPath string, opts Options) *Report {
	t.Helper()
	wasm, err := safefile.ReadFile(wasmPath, host.MaxModuleFileBytes)
	if err != nil {
		t.Fatalf("gatekit: %v", err)
	}
	r, err := Check(context.Background(), wasm, opts)
	if err != nil {
		t.Fatalf("gatekit: %v", err)
	}
	for _, f := range r.Failures {
		t.Errorf("%s", f)
	}
	t.Logf("gatekit: %d requests, %d failures, slowest %v (%s; budget %v, %d MiB)",
		len(r.Results), len(r.Failures), r.MaxDuration, r.Slowest, r.Budget.Time, r.Budget.Memory>>20)
	return r
}

// Fixed run inputs, so that equal subjects make byte-equal requests.
const fixedRunID = "0123456789abcdef0123456789abcdef"

var fixedNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// minimalSubjects are small valid subjects of each kind.
var minimalSubjects = map[abi.SubjectKind]json.RawMessage{
	abi.SubjectProposal: json.RawMessage(`{"actions":[{"id":"a1","tool":"gatetest_probe","parameters":{"n":1}}]}`),
	abi.SubjectToolCall: json.RawMessage(`{"id":"c1","tool":"gatetest_probe","parameters":{"n":1}}`),
	abi.SubjectMerge:    json.RawMessage(`{"file_changes":[{"path":"README.md","before":"a\n","after":"b\n"}]}`),
}

// unhandledReasons are answers that say the gate did not evaluate the
// subject at all.
var unhandledReasons = []string{abi.ReasonBadRequest, abi.ReasonUnsupportedABI, abi.ReasonGatePanic, abi.ReasonNotRegistered, abi.ReasonResponseEncoding, abi.ReasonUnspecified}

// Check runs the conformance checks on the module wasm and returns the
// report; see Report.Err. The error is for what stops the kit itself (a
// context done); a module that fails to load is a Failure.
func Check(ctx context.Context, wasm []byte, opts Options) (*Report, error) {
	sum := sha256.Sum256(wasm)
	r := &Report{SHA256: hex.EncodeToString(sum[:]), Size: len(wasm), Results: []Result{}, Failures: []Failure{}, Checks: map[string]string{}}
	r.Budget = opts.Budget
	if r.Budget.Time <= 0 {
		r.Budget.Time = DefaultBudgetTime
	}
	if r.Budget.Memory == 0 {
		r.Budget.Memory = DefaultBudgetMemory
	}
	r.Budget.OversizedTime = max(cmp.Or(opts.Budget.OversizedTime, DefaultBudgetOversizedTime), r.Budget.Time)
	defer r.summarize()

	info, err := Inspect(ctx, wasm)
	if err != nil {
		r.fail(CheckModule, "", "%v", err)
		return r, nil
	}
	r.Info = info
	for _, p := range info.Problems {
		r.fail(CheckModule, "", "%s", p)
	}
	if len(info.Problems) > 0 {
		return r, nil
	}
	desc, _, err := Describe(ctx, wasm, opts.Host.CacheDir)
	if err != nil {
		r.fail(CheckDescriptor, "", "%v", err)
		return r, nil
	}
	r.Descriptor = &desc
	known := host.KnownCapabilities()
	var grant []string
	for _, c := range desc.Capabilities {
		if slices.Contains(known, c) {
			grant = append(grant, c)
		} else {
			r.fail(CheckDescriptor, "", "declares capability %q, which no host knows (known: %v); an operator cannot grant it", c, known)
		}
	}

	k := &kit{r: r, opts: opts, desc: desc, grant: grant, pipelines: map[string]host.PipelineConfig{}, undeclared: map[string][]string{}}
	defer k.reportUndeclared()
	cfg := opts.Host
	cfg.Plugins = map[string]host.PluginConfig{"gate": {Module: wasm}}
	cfg.PoolSize = 1
	cfg.Quarantine = host.QuarantineConfig{Disabled: true}
	cfg.Now = func() time.Time { return fixedNow }
	cfg.EventLogPath = ""
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	k.pipeline("oversized", desc.SubjectKinds[0], opts.Config, grant)
	k.pipelines["oversized"].Stages[0].Timeout = r.Budget.OversizedTime
	for _, kind := range desc.SubjectKinds {
		k.pipeline("probe-"+string(kind), kind, opts.Config, grant)
		if len(grant) > 0 {
			k.pipeline("denied-"+string(kind), kind, opts.Config, []string{})
		}
	}
	caseLine := map[string]string{}
	for _, c := range opts.Cases {
		kind := cmpKind(c.SubjectKind, desc.SubjectKinds[0])
		if !slices.Contains(desc.SubjectKinds, kind) {
			r.fail(CheckCase, c.Name, "subject_kind %q is not declared by the gate (%v)", kind, desc.SubjectKinds)
			continue
		}
		conf := c.Config
		if conf == nil {
			conf = opts.Config
		}
		g := grant
		if c.Granted != nil {
			g = *c.Granted
		}
		key := fmt.Sprintf("case-%x", sha256.Sum256([]byte(fmt.Sprint(kind, string(conf), g))))[:21]
		k.pipeline(key, kind, conf, g)
		caseLine[c.Name] = key
	}
	cfg.Pipelines = k.pipelines
	// Partial grants: the denied probes and cases with fewer grants check
	// how the gate copes with a denied call, which an operator's host
	// refuses to configure.
	h, err := host.New(hostkit.WithPartialGrants(ctx), cfg)
	if err != nil {
		if errors.Is(err, host.ErrStageConfig) {
			r.fail(CheckDescriptor, "", "the stage config does not validate against config_schema (pass the config the gate needs: Options.Config, a case's config, or --config): %v", err)
		} else {
			r.fail(CheckDescriptor, "", "%v", err)
		}
		return r, nil
	}
	defer h.Close(context.Background())
	k.h = h

	var replay []replayed
	// Every declared kind is handled, answered without a fault, within
	// budget; with no capability granted the gate still answers.
	kindAnswer := map[abi.SubjectKind]host.StageResult{}
	for _, kind := range desc.SubjectKinds {
		subject := cmpRaw(opts.Subjects[kind], minimalSubjects[kind])
		name := "kind/" + string(kind)
		res, ok := k.check(ctx, name, "probe-"+string(kind), subject)
		if !ok {
			continue
		}
		kindAnswer[kind] = res
		replay = append(replay, replayed{name, "probe-" + string(kind), subject, res})
		if res.Verdict == abi.Inconclusive && (slices.Contains(unhandledReasons, res.Reason) || strings.HasPrefix(res.Reason, abi.ReasonPrefixUnsupported)) {
			r.fail(CheckSubjectKinds, name, "declared kind %s is not handled: a valid subject got inconclusive (%s)", kind, res.Reason)
		}
		if len(grant) > 0 {
			if res, ok := k.check(ctx, "denied/"+string(kind), "denied-"+string(kind), subject); ok && res.Verdict == abi.Accepted {
				r.fail(CheckCapabilities, "denied/"+string(kind), "accepted with none of its capabilities %v granted", grant)
			}
		}
	}
	// Malformed, empty and oversized requests.
	first := desc.SubjectKinds[0]
	for _, p := range rawProbes(desc, first, cmpRaw(opts.Subjects[first], minimalSubjects[first]), opts.Config, cmp.Or(opts.OversizedBytes, DefaultOversizedBytes)) {
		line := "probe-" + string(first)
		if strings.HasPrefix(p.name, "oversized/") {
			line = "oversized"
		}
		res, err := h.EvaluateRequest(ctx, line, p.request)
		if err != nil {
			return r, err
		}
		if !k.assess(p.name, res) {
			continue
		}
		if p.want == "" && res.Verdict != abi.Inconclusive {
			r.fail(CheckMalformed, p.name, "answered %s, want inconclusive: %s", res.Verdict, p.about)
		}
		if p.want == "same" {
			if base, ok := kindAnswer[first]; ok && (base.Verdict != res.Verdict || !slices.Equal(codes(base.Findings), codes(res.Findings))) {
				r.fail(CheckMalformed, p.name, "answered %s %v, but %s %v without the padding: %s", res.Verdict, codes(res.Findings), base.Verdict, codes(base.Findings), p.about)
			}
		}
		if p.name == "malformed/undeclared_kind" {
			for kind, base := range kindAnswer {
				if base.Verdict == res.Verdict && base.Reason == res.Reason && base.Verdict == abi.Inconclusive {
					r.fail(CheckSubjectKinds, "kind/"+string(kind), "answers %s (%s), exactly as for a kind it does not declare", base.Verdict, base.Reason)
				}
			}
		}
	}
	// The author's cases.
	for _, c := range opts.Cases {
		line, ok := caseLine[c.Name]
		if !ok {
			continue
		}
		name := "case/" + c.Name
		if c.InvalidSubject {
			_, err := h.Check(ctx, line, c.Subject, host.RunOptions{RunID: fixedRunID, Now: fixedNow})
			if !errors.Is(err, host.ErrBadSubject) {
				r.fail(CheckCase, name, "invalid_subject: the host accepted the subject (err %v)", err)
			}
			continue
		}
		res, ok := k.check(ctx, name, line, c.Subject)
		if !ok {
			continue
		}
		replay = append(replay, replayed{name, line, c.Subject, res})
		var problems []string
		if res.Verdict != c.WantVerdict {
			problems = append(problems, fmt.Sprintf("verdict %s, want %s", res.Verdict, c.WantVerdict))
		}
		if c.WantReason != "" && res.Reason != c.WantReason {
			problems = append(problems, fmt.Sprintf("reason %q, want %q", res.Reason, c.WantReason))
		}
		if c.WantCodes != nil {
			want := slices.Sorted(slices.Values(c.WantCodes))
			if got := codes(res.Findings); !slices.Equal(got, want) {
				problems = append(problems, fmt.Sprintf("codes %v, want %v", got, want))
			}
		}
		if len(problems) > 0 {
			r.fail(CheckCase, name, "%s (%s)", strings.Join(problems, "; "), c.Note)
		}
	}
	// Determinism: the same requests again, in reverse order, on an
	// instance that has served other requests in between.
	for i := len(replay) - 1; i >= 0; i-- {
		p := replay[i]
		d, err := h.Check(ctx, p.pipeline, p.subject, host.RunOptions{RunID: fixedRunID, Now: fixedNow})
		if err != nil {
			r.fail(CheckDeterminism, p.name, "second run: %v", err)
			continue
		}
		again := d.Stages[0]
		if again.Err() != nil {
			k.assess(p.name+" (again)", again)
			continue
		}
		if a, b := answerJSON(p.first), answerJSON(again); a != b {
			r.fail(CheckDeterminism, p.name, "the same request answered differently:\n  first:  %s\n  second: %s", a, b)
		}
	}
	return r, nil
}

type kit struct {
	r         *Report
	opts      Options
	desc      abi.Descriptor
	grant     []string
	pipelines map[string]host.PipelineConfig
	h         *host.Host
	// undeclared maps an operation of an undeclared capability the gate
	// called to the requests it called it in.
	undeclared      map[string][]string
	undeclaredOrder []string
}

// reportUndeclared reports each undeclared operation once, with the requests
// that called it.
func (k *kit) reportUndeclared() {
	for _, op := range k.undeclaredOrder {
		in := k.undeclared[op]
		where := strings.Join(in, ", ")
		if len(in) > 3 {
			where = fmt.Sprintf("%s, … (%d requests)", strings.Join(in[:3], ", "), len(in))
		}
		k.r.fail(CheckCapabilities, in[0], "called %s, whose capability %q the descriptor does not declare (declares %v); in %s",
			op, abi.CapabilityOf(op), k.desc.Capabilities, where)
	}
}

type replayed struct {
	name, pipeline string
	subject        json.RawMessage
	first          host.StageResult
}

func (k *kit) pipeline(name string, kind abi.SubjectKind, conf json.RawMessage, grant []string) {
	k.pipelines[name] = host.PipelineConfig{Subject: kind, Stages: []host.StageConfig{{
		Name: "gate", Plugin: "gate", Timeout: k.r.Budget.Time, MemoryLimit: k.r.Budget.Memory,
		Capabilities: grant, Config: conf,
	}}}
}

// check runs subject through the pipeline with host.Check and assesses the
// stage; ok is false when the host decided it.
func (k *kit) check(ctx context.Context, name, pipeline string, subject json.RawMessage) (host.StageResult, bool) {
	d, err := k.h.Check(ctx, pipeline, subject, host.RunOptions{RunID: fixedRunID, Now: fixedNow})
	if err != nil {
		k.r.fail(CheckCase, name, "the host refused the run: %v", err)
		return host.StageResult{}, false
	}
	res := d.Stages[0]
	return res, k.assess(name, res)
}

// assess records the result and every failure it shows; ok is false when
// the host decided the stage (the gate gave no valid answer).
func (k *kit) assess(name string, res host.StageResult) bool {
	r := k.r
	dur := time.Duration(res.DurationMicros) * time.Microsecond
	if dur > r.MaxDuration {
		r.MaxDuration, r.Slowest = dur, name
	}
	r.Results = append(r.Results, Result{Case: name, Verdict: res.Verdict, Reason: res.Reason, Codes: codes(res.Findings), Duration: dur, Host: res.Err() != nil})
	if denied, ok := res.Evidence["capability_denied"].([]string); ok {
		for _, op := range denied {
			if !slices.Contains(k.desc.Capabilities, abi.CapabilityOf(op)) {
				if _, seen := k.undeclared[op]; !seen {
					k.undeclaredOrder = append(k.undeclaredOrder, op)
				}
				k.undeclared[op] = append(k.undeclared[op], name)
			}
		}
	}
	if err := res.Err(); err != nil {
		detail := firstLine(fmt.Sprint(res.Evidence["error"]))
		if s, ok := res.Evidence["stderr"]; ok {
			detail += "; stderr: " + lastLine(fmt.Sprint(s))
		}
		switch res.Reason {
		case abi.ReasonPluginTimeout:
			limit := r.Budget.Time
			if strings.HasPrefix(name, "oversized/") {
				limit = r.Budget.OversizedTime
			}
			r.fail(CheckBudget, name, "over the time budget of %v: %s", limit, detail)
		case abi.ReasonPluginOutOfMemory:
			r.fail(CheckBudget, name, "over the memory budget of %d MiB: %s", r.Budget.Memory>>20, detail)
		case abi.ReasonABIViolation:
			check := CheckResponse
			if strings.Contains(detail, "'evidence'") {
				check = CheckEvidence
			}
			r.fail(check, name, "answer outside the ABI (abi_violation): %s", detail)
		case abi.ReasonPluginTrap:
			r.fail(CheckTrap, name, "trapped: %s", detail)
		default:
			r.fail(CheckResponse, name, "no answer (%s): %s", res.Reason, detail)
		}
		return false
	}
	if res.Verdict == abi.Accepted && len(res.Evidence) == 0 {
		r.fail(CheckEvidence, name, "accepted without evidence")
	}
	return true
}

func (r *Report) summarize() {
	all := []string{CheckModule, CheckDescriptor, CheckSubjectKinds, CheckMalformed, CheckResponse, CheckDeterminism,
		CheckCapabilities, CheckBudget, CheckEvidence, CheckTrap, CheckCase}
	for _, c := range all {
		r.Checks[c] = "pass"
		if r.Descriptor == nil && c != CheckModule && c != CheckDescriptor {
			r.Checks[c] = "skipped"
		}
	}
	for _, f := range r.Failures {
		r.Checks[f.Check] = "fail"
	}
}

type rawProbe struct {
	name    string
	request []byte
	// want is "" for inconclusive, "same" for the unpadded kind probe's
	// verdict and codes, "any" for any answer of the gate.
	want  string
	about string
}

// rawProbes are requests the host itself never sends, handed to the gate as
// they are.
func rawProbes(desc abi.Descriptor, kind abi.SubjectKind, subject, config json.RawMessage, size int) []rawProbe {
	req := func(mut func(*abi.Request)) []byte {
		r := abi.Request{ABIVersion: abi.MajorVersion, MinorVersion: abi.MinorVersion, RunID: fixedRunID,
			Pipeline: "conformance", Stage: "gate", SubjectKind: kind, Subject: subject,
			Context: abi.Context{Now: fixedNow.Format(time.RFC3339Nano), Capabilities: desc.Capabilities}}
		if len(desc.ConfigSchema) > 0 {
			r.Config = cmpRaw(compactJSON(config), json.RawMessage(`{}`))
		}
		if mut != nil {
			mut(&r)
		}
		b, _ := json.Marshal(r)
		return b
	}
	valid := req(nil)
	undeclared := abi.SubjectKind("gatetest_unknown_kind")
	for _, k := range []abi.SubjectKind{abi.SubjectProposal, abi.SubjectToolCall, abi.SubjectMerge} {
		if !slices.Contains(desc.SubjectKinds, k) {
			undeclared = k
			break
		}
	}
	padded := req(func(r *abi.Request) {
		var obj map[string]json.RawMessage
		_ = json.Unmarshal(subject, &obj)
		if obj == nil {
			obj = map[string]json.RawMessage{}
		}
		obj["gatetest_padding"], _ = json.Marshal(strings.Repeat("x", max(size-len(subject)-64, 1)))
		r.Subject, _ = json.Marshal(obj)
	})
	probes := []rawProbe{
		{name: "malformed/not_json", request: []byte("this is not JSON"), about: "a request that is not JSON"},
		{name: "malformed/truncated", request: valid[:len(valid)/2], about: "a request cut in half"},
		{name: "malformed/not_object", request: []byte(`[1,2,3]`), about: "a request that is a JSON array"},
		{name: "malformed/abi_version_2", request: req(func(r *abi.Request) { r.ABIVersion = 2 }), about: "a request of ABI major 2 (SPEC §5.3)"},
		{name: "malformed/undeclared_kind", request: req(func(r *abi.Request) { r.SubjectKind = undeclared }), about: "subject_kind " + string(undeclared) + ", which the gate does not declare"},
		{name: "malformed/subject_not_object", request: req(func(r *abi.Request) { r.Subject = json.RawMessage(`"x"`) }), about: "a subject that is a string"},
		{name: "malformed/invalid_utf8", request: append(append([]byte(`{"abi_version":1,"subject_kind":"`), 0xff, 0xfe), `"}`...), about: "a request that is not UTF-8"},
		{name: "empty/object", request: []byte(`{}`), about: "the empty object"},
		{name: "empty/whitespace", request: []byte(" \n"), about: "whitespace only"},
		{name: "oversized/unterminated", request: append(valid[:len(valid)-1:len(valid)-1], append([]byte(`,"x":"`), bytes.Repeat([]byte("y"), size)...)...), about: fmt.Sprintf("a %d-byte request whose last string never ends", size)},
		{name: "oversized/padded", request: padded, want: "same", about: fmt.Sprintf("a subject padded to %d bytes with an unknown member, which a gate must ignore (SPEC §5.1)", size)},
	}
	if desc.ConfigCache && len(desc.ConfigSchema) > 0 {
		probes = append(probes, rawProbe{name: "malformed/config_not_held",
			request: req(func(r *abi.Request) { r.Config, r.ConfigDigest = nil, abi.ConfigDigestPrefix+strings.Repeat("0", 64) }),
			about:   "config_digest alone, naming a config the gate was never sent (SPEC §5.3: config_not_held)"})
	}
	return probes
}

func compactJSON(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 || string(b) == "null" {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}

func codes(fs []abi.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Code)
	}
	slices.Sort(out)
	return out
}

func answerJSON(r host.StageResult) string {
	b, _ := json.Marshal(struct {
		V abi.Verdict    `json:"verdict"`
		R string         `json:"reason,omitempty"`
		B string         `json:"basis,omitempty"`
		F []abi.Finding  `json:"findings"`
		E map[string]any `json:"evidence,omitempty"`
	}{r.Verdict, r.Reason, r.Basis, r.Findings, r.Evidence})
	return string(b)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func cmpKind(a, b abi.SubjectKind) abi.SubjectKind {
	if a != "" {
		return a
	}
	return b
}

func cmpRaw(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 {
		return a
	}
	return b
}

// ModuleInfo is what a module declares, read without running its code.
type ModuleInfo = engine.Info

// Inspect reports a module's imports, exports, declared memory and every way
// its shape breaks the ABI (all of them; loading stops at the first). The
// error is non-nil only when wasm is not a WebAssembly module (errors.Is
// host.ErrCompile) or exceeds a shape limit (host.ErrTooComplex).
func Inspect(ctx context.Context, wasm []byte) (*ModuleInfo, error) {
	return engine.Inspect(ctx, wasm)
}

// Describe loads wasm as the host does at start (abi/SPEC.md §3.1 steps 2–9,
// with the default memory limit and load deadline) and returns its
// descriptor: parsed, and as the module served it. cacheDir is as
// host.Config.CacheDir, "" meaning no cache. The error is a *host.LoadError.
func Describe(ctx context.Context, wasm []byte, cacheDir string) (abi.Descriptor, json.RawMessage, error) {
	return host.Describe(ctx, wasm, cacheDir)
}
