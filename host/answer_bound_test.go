package host_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// patternGate assembles a gate whose every answer is prefix, then unit
// repeated n times, then suffix (built in guest memory at run time, so an
// answer of tens of megabytes needs no data segment that large). It returns
// the module and the answer's bytes.
func patternGate(t testing.TB, prefix, unit string, n int, suffix string) ([]byte, []byte) {
	t.Helper()
	const scratch, page = 1024, 65536
	unitAt := scratch + len(prefix)
	suffixAt := unitAt + len(unit)
	out := (suffixAt + len(suffix) + page) / page * page
	total := len(prefix) + n*len(unit) + len(suffix)
	req := (out + total + page) / page * page
	pages := req/page + 1
	desc := `{"abi_version":1,"name":"pattern","version":"0.0.1","subject_kinds":["proposal"]}`
	wat := fmt.Sprintf(`(module
  (memory (export "memory") %d)
  (data (i32.const 16) "%s")
  (data (i32.const %d) "%s")
  (data (i32.const %d) "%s")
  (data (i32.const %d) "%s")
  (func (export "gate_abi_version") (result i32) (i32.const 1))
  (func (export "gate_describe") (result i64) (i64.const %d))
  (func (export "gate_alloc") (param $n i32) (result i32)
    (local $need i32)
    (local.set $need (i32.add (i32.shr_u (i32.add (local.get $n) (i32.const %d)) (i32.const 16)) (i32.const 1)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
        (then (return (i32.const 0))))))
    (i32.const %d))
  (func (export "gate_evaluate") (param i32 i32) (result i64)
    (local $p i32) (local $i i32)
    (memory.copy (i32.const %d) (i32.const %d) (i32.const %d))
    (local.set $p (i32.const %d))
    (local.set $i (i32.const %d))
    (block $done (loop $more
      (br_if $done (i32.eqz (local.get $i)))
      (memory.copy (local.get $p) (i32.const %d) (i32.const %d))
      (local.set $p (i32.add (local.get $p) (i32.const %d)))
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (br $more)))
    (memory.copy (local.get $p) (i32.const %d) (i32.const %d))
    (i64.const %d))
)`, pages, watString(desc),
		scratch, watString(prefix), unitAt, watString(unit), suffixAt, watString(suffix),
		16<<32|len(desc),
		req, req,
		out, scratch, len(prefix), out+len(prefix), n, unitAt, len(unit), len(unit),
		suffixAt, len(suffix), uint64(out)<<32|uint64(total))
	dir := t.TempDir()
	src := filepath.Join(dir, "gate.wat")
	require.NoError(t, os.WriteFile(src, []byte(wat), 0o600))
	b, err := exec.Command("wat2wasm", "-o", filepath.Join(dir, "gate.wasm"), src).CombinedOutput()
	require.NoError(t, err, "%s", b)
	wasm, err := os.ReadFile(filepath.Join(dir, "gate.wasm"))
	require.NoError(t, err)
	return wasm, []byte(prefix + strings.Repeat(unit, n) + suffix)
}

func watString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, `\%02x`, c)
		}
	}
	return b.String()
}

// bigAnswer is a gate answer that its stage cannot keep whole.
type bigAnswer struct {
	name                  string
	prefix, unit, suffix  string
	n                     int
	verdict               abi.Verdict
	maxResponse, memLimit int // 0: defaults
}

func bigAnswers() []bigAnswer {
	const mib = 1 << 20
	finding := `{"code":"f","severity":"advisory","message":"m"},`
	blocking := `{"code":"b","severity":"blocking","message":"m"}`
	return []bigAnswer{
		{name: "1 MiB of < in evidence (6× when escaped)", verdict: abi.Accepted,
			prefix: `{"verdict":"accepted","evidence":{"x":"`, unit: strings.Repeat("<", 1024), n: mib/1024 - 1, suffix: `"}}`},
		// Past the log's 4 MiB record cap before escaping, 48 MB after.
		{name: "8 MB evidence string, max_response_bytes 16 MiB", verdict: abi.Accepted, maxResponse: 16 * mib, memLimit: 64 * mib,
			prefix: `{"verdict":"accepted","evidence":{"x":"`, unit: strings.Repeat("&", 4096), n: 8_000_000 / 4096, suffix: `"}}`},
		{name: "20 000 findings, the blocking one last", verdict: abi.Rejected,
			prefix: `{"verdict":"rejected","findings":[`, unit: finding, n: 20_000, suffix: blocking + `]}`},
		{name: "one finding with a 1 MiB message of U+2028", verdict: abi.Rejected,
			prefix: `{"verdict":"rejected","findings":[{"code":"b","severity":"blocking","message":"`, unit: strings.Repeat("\u2028", 300), n: mib/900 - 1, suffix: `"}]}`},
		{name: "findings with large details", verdict: abi.Rejected,
			prefix: `{"verdict":"rejected","findings":[` + blocking, unit: `,{"code":"d","severity":"advisory","message":"m","details":{"d":"` + strings.Repeat(">", 8000) + `"}}`, n: 100, suffix: `]}`},
		{name: "20 000 evidence members of escapes", verdict: abi.Accepted,
			prefix: `{"verdict":"accepted","evidence":{"k":0`, unit: `,"<&>`, n: 20_000, suffix: `"}}`},
		{name: "wide evidence 60 levels deep", verdict: abi.Accepted,
			prefix: `{"verdict":"accepted","evidence":{"x":[`, unit: strings.Repeat("[", 58) + `"<<<<<<<<"` + strings.Repeat("]", 58) + ",", n: 5_000, suffix: `0]}}`},
		{name: "inconclusive with huge evidence", verdict: abi.Inconclusive,
			prefix: `{"verdict":"inconclusive","reason":"gate_error","evidence":{"x":"`, unit: strings.Repeat("<", 1024), n: mib/1024 - 1, suffix: `"}}`},
	}
}

// TestBigAnswersAreRecorded: whatever a gate answers within the configured
// limits, advisory or enforcing, the run is recorded, the log verifies, the
// verdict is the enforcing stages', and the stage record keeps the answer's
// digest and marks what it cut.
func TestBigAnswersAreRecorded(t *testing.T) {
	base, _ := patternGate(t, `{"verdict":"accepted","evidence":{"ok":true}}`, "", 0, "")
	for _, a := range bigAnswers() {
		// The evidence-member case repeats a key prefix: make each unique.
		if a.name == "20 000 evidence members of escapes" {
			a.unit, a.suffix = "", `}}`
			var b strings.Builder
			for i := range a.n {
				fmt.Fprintf(&b, ",\"k%d\":\"<&>\u2028\"", i)
			}
			a.prefix += b.String()
			a.n = 0
		}
		big, answer := patternGate(t, a.prefix, a.unit, a.n, a.suffix)
		require.True(t, json.Valid(answer), a.name)
		sum := sha256.Sum256(answer)
		for _, mode := range []host.Mode{host.Advisory, host.Enforce} {
			t.Run(a.name+"/"+string(mode), func(t *testing.T) {
				logPath := filepath.Join(t.TempDir(), "events.jsonl")
				stages := []host.StageConfig{{Name: "base", Plugin: "base"}, {Name: "big", Plugin: "big", Mode: mode, MemoryLimit: uint64(a.memLimit)}}
				h := hosttest.New(t, host.Config{
					Plugins:          map[string]host.PluginConfig{"base": {Module: base}, "big": {Module: big}},
					Pipelines:        map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: stages}},
					EventLogPath:     logPath,
					MaxResponseBytes: a.maxResponse,
				})
				d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
				require.NoError(t, err, "the run is recorded")
				want := abi.Accepted // the enforcing base stage's
				if mode == host.Enforce {
					want = host.Combine([]host.StageResult{{Mode: host.Enforce, Verdict: abi.Accepted}, {Mode: host.Enforce, Verdict: a.verdict}})
				}
				assert.Equal(t, want, d.Verdict)
				st := d.Stages[1]
				require.Equal(t, a.verdict, st.Verdict, "the gate's verdict stands: %v", st.Evidence["error"])
				require.NotNil(t, st.Answer)
				assert.Equal(t, hex.EncodeToString(sum[:]), st.Answer.SHA256)
				assert.Equal(t, len(answer), st.Answer.Bytes)
				assert.True(t, st.Answer.Truncated, "the cut is marked")
				if a.verdict == abi.Rejected {
					assert.True(t, hasBlocking(st.Findings), "a kept rejection keeps a blocking finding")
				}
				require.NoError(t, h.Close(context.Background()))

				rep, err := eventlog.Verify(logPath)
				require.NoError(t, err)
				assert.EqualValues(t, 3, rep.Records)
				recs := readRecords(t, logPath)
				require.Len(t, recs, 3)
				assert.Equal(t, string(want), recs[2].Verdict, "the decision record")
				var data struct {
					Answer *host.Answer `json:"answer"`
				}
				require.NoError(t, json.Unmarshal(recs[1].Data, &data))
				require.NotNil(t, data.Answer)
				assert.Equal(t, *st.Answer, *data.Answer, "the record keeps what the Decision keeps")
			})
		}
	}
}

func hasBlocking(fs []abi.Finding) bool {
	for _, f := range fs {
		if f.Severity == abi.Blocking {
			return true
		}
	}
	return false
}

func readRecords(t *testing.T, path string) []eventlog.Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, eventlog.MaxRecordBytes+1)
	var recs []eventlog.Record
	for sc.Scan() {
		var r eventlog.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		recs = append(recs, r)
	}
	require.NoError(t, sc.Err())
	return recs
}

// TestManyStagesOfFindingsAreRecorded: the decision record repeats the
// stages' findings; however many stages there are, it stays bounded, says
// how many findings there were, and the run is recorded.
func TestManyStagesOfFindingsAreRecorded(t *testing.T) {
	gate, _ := patternGate(t, `{"verdict":"rejected","findings":[`,
		`{"code":"f","severity":"blocking","message":"`+strings.Repeat("<", 1000)+`"},`, 200,
		`{"code":"b","severity":"blocking","message":"m"}]}`)
	const n = 40
	stages := make([]host.StageConfig, n)
	for i := range stages {
		stages[i] = host.StageConfig{Name: fmt.Sprintf("s%d", i), Plugin: "g", Mode: host.Advisory}
	}
	stages[0].Mode = host.Enforce
	logPath := filepath.Join(t.TempDir(), "events.jsonl")
	h := hosttest.New(t, host.Config{
		Plugins:      map[string]host.PluginConfig{"g": {Module: gate}},
		Pipelines:    map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: stages}},
		EventLogPath: logPath,
	})
	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Rejected, d.Verdict)
	for _, st := range d.Stages {
		assert.LessOrEqual(t, len(st.Findings), host.MaxKeptFindings)
		assert.Equal(t, 201, st.Answer.Findings)
	}
	require.NoError(t, h.Close(context.Background()))
	_, err = eventlog.Verify(logPath)
	require.NoError(t, err)
	recs := readRecords(t, logPath)
	require.Len(t, recs, n+1)
	var dec struct {
		Findings      []json.RawMessage `json:"findings"`
		FindingsTotal int               `json:"findings_total"`
	}
	require.NoError(t, json.Unmarshal(recs[n].Data, &dec))
	assert.Equal(t, len(d.Findings), dec.FindingsTotal)
	assert.Less(t, len(dec.Findings), len(d.Findings))
	assert.LessOrEqual(t, len(recs[n].Data), host.MaxDecisionFindingsBytes+4096)
}

// TestRefusedAnswerDigest: an answer the host refuses (abi_violation) is
// still described by its digest and size, so the record names what the
// gate sent.
func TestRefusedAnswerDigest(t *testing.T) {
	gate, answer := patternGate(t, `{"verdict":"accepted","evidence":{"x":`, "[", 100, strings.Repeat("]", 100)+`}}`)
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"g": {Module: gate}},
		Pipelines: hosttest.OnePipeline("g"),
	})
	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	st := d.Stages[0]
	assert.Equal(t, abi.ReasonABIViolation, st.Reason)
	assert.ErrorIs(t, d.Err(), host.ErrABIViolation)
	require.NotNil(t, st.Answer)
	sum := sha256.Sum256(answer)
	assert.Equal(t, hex.EncodeToString(sum[:]), st.Answer.SHA256)
	assert.Equal(t, len(answer), st.Answer.Bytes)
	assert.False(t, st.Answer.Truncated)
}
