package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/runecut"
)

// Bounds on what a stage keeps of a gate's answer, in the Decision and in its
// event log record (docs/CONFIGURATION.md "Limits"). Sizes are of the JSON
// encoding the log writes, escapes included, so an answer of characters that
// encode six times larger (such as "<", written \u003c) is bounded like any
// other. Together they keep a stage record far below eventlog.MaxRecordBytes
// whatever the answer held, up to any MaxResponseBytes the config accepts.
const (
	// MaxKeptEvidenceBytes bounds a stage's evidence.
	MaxKeptEvidenceBytes = 64 << 10
	// MaxKeptFindings and MaxKeptFindingsBytes bound a stage's findings.
	// Blocking findings are kept before advisory ones, so a kept rejection
	// still shows why.
	MaxKeptFindings      = 100
	MaxKeptFindingsBytes = 256 << 10
	// MaxKeptStringBytes bounds one string of the evidence; a finding's
	// strings are bounded to maxFindingStringBytes and its details to
	// maxFindingDetailsBytes.
	MaxKeptStringBytes = 4 << 10
	// MaxDecisionFindingsBytes bounds the findings of all stages that the
	// decision record repeats (each stage's own record holds them too).
	MaxDecisionFindingsBytes = 1 << 20

	maxFindingStringBytes  = 1 << 10
	maxFindingDetailsBytes = 2 << 10
)

// Answer describes a gate's answer as the host received it: every stage
// whose gate answered has one, whether the answer was accepted by the ABI or
// refused (abi_violation).
type Answer struct {
	// SHA256 is the lowercase hex SHA-256 of the answer's bytes, so that
	// anyone holding the whole answer can match it to the record.
	SHA256 string `json:"sha256"`
	// Bytes is the answer's length.
	Bytes int `json:"bytes"`
	// Truncated says the stage keeps less of the answer than it held: its
	// evidence, findings or strings in them were cut to the bounds above.
	// The verdict, reason and basis are always kept whole, and were
	// decided on the whole answer.
	Truncated bool `json:"truncated,omitempty"`
	// Findings is the number of findings the answer held, set when
	// Truncated.
	Findings int `json:"findings,omitempty"`
}

func newAnswer(out []byte) *Answer {
	sum := sha256.Sum256(out)
	return &Answer{SHA256: hex.EncodeToString(sum[:]), Bytes: len(out)}
}

// boundAnswer returns resp with its evidence and findings cut to the bounds,
// and the answer's description. The verdict, reason and basis are untouched.
func boundAnswer(resp abi.Response, out []byte) (abi.Response, *Answer) {
	a := newAnswer(out)
	if resp.Evidence != nil {
		if ev, _, cut := prune(resp.Evidence, MaxKeptEvidenceBytes, MaxKeptStringBytes); cut {
			resp.Evidence, _ = ev.(map[string]any)
			if resp.Evidence == nil {
				resp.Evidence = map[string]any{}
			}
			a.Truncated = true
		}
	}
	if fs, cut := boundFindings(resp.Findings); cut {
		a.Truncated, a.Findings = true, len(resp.Findings)
		resp.Findings = fs
	}
	return resp, a
}

// boundFindings keeps at most MaxKeptFindings findings within
// MaxKeptFindingsBytes, blocking ones first, in their original order, each
// with its strings and details bounded. cut reports whether anything was
// left out or shortened.
func boundFindings(fs []abi.Finding) (kept []abi.Finding, cut bool) {
	order := make([]int, 0, min(len(fs), MaxKeptFindings))
	for _, blocking := range []bool{true, false} {
		for i, f := range fs {
			if len(order) == MaxKeptFindings {
				break
			}
			if (f.Severity == abi.Blocking) == blocking {
				order = append(order, i)
			}
		}
	}
	cut = len(order) < len(fs)
	chosen := make(map[int]abi.Finding, len(order))
	left := MaxKeptFindingsBytes
	for _, i := range order {
		f, size, shortened := boundFinding(fs[i])
		if size > left {
			cut = true
			break
		}
		left -= size
		cut = cut || shortened
		chosen[i] = f
	}
	if !cut {
		return fs, false
	}
	kept = make([]abi.Finding, 0, len(chosen))
	for _, i := range slices.Sorted(maps.Keys(chosen)) {
		kept = append(kept, chosen[i])
	}
	return kept, true
}

// boundFinding returns f with its strings and details bounded, an upper
// bound of its encoded size, and whether anything was shortened.
func boundFinding(f abi.Finding) (abi.Finding, int, bool) {
	size, cut := 160, false // member names, punctuation, severity, tier, action_index
	for _, s := range []*string{&f.Code, &f.Message, &f.ActionID, &f.Path, &f.Keyword, &f.Suggestion} {
		var n int
		var c bool
		*s, n, c = boundString(*s, maxFindingStringBytes)
		size += n
		cut = cut || c
	}
	if f.Details != nil {
		d, used, c := prune(f.Details, maxFindingDetailsBytes, maxFindingStringBytes)
		if c {
			f.Details, _ = d.(map[string]any)
			cut = true
		}
		size += used
	}
	return f, size, cut
}

// ellipsis marks a string that was cut.
const ellipsis = "…"

// boundString returns s, or its longest prefix (at a rune boundary) that
// with ellipsis encodes in at most max bytes, quotes included; the encoded
// size; and whether it was cut. When not even the ellipsis fits it returns
// "" and size 0.
func boundString(s string, max int) (string, int, bool) {
	if n := 2 + encodedLen(s); n <= max {
		return s, n, false
	}
	budget := max - 2 - len(ellipsis)
	if budget <= 0 {
		return "", 0, true
	}
	p, n := runecut.Prefix(s, budget, runeCost)
	return p + ellipsis, 2 + n + len(ellipsis), true
}

// encodedLen is an upper bound of the length of s encoded by encoding/json,
// quotes excluded.
func encodedLen(s string) int {
	n := 0
	for _, r := range s {
		n += runeCost(r, utf8.RuneLen(r))
	}
	return n
}

// runeCost is an upper bound of the bytes encoding/json writes for r, which
// took size bytes in the input: HTML characters, U+2028, U+2029, control
// characters and invalid bytes become six-byte \u escapes.
func runeCost(r rune, size int) int {
	switch {
	case r == utf8.RuneError:
		return 6
	case r == '\n' || r == '\r' || r == '\t' || r == '"' || r == '\\':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	}
	return size
}

// prune returns what a pruner keeps of v within left bytes, strings cut to
// maxString; the bytes it used; and whether anything was cut. Most answers
// fit whole: v is then measured, not copied, and kept is nil.
func prune(v any, left, maxString int) (kept any, used int, cut bool) {
	p := pruner{left: left, maxString: maxString, measure: true}
	p.value(v)
	if !p.cut {
		return nil, left - p.left, false
	}
	p = pruner{left: left, maxString: maxString}
	kept, _ = p.value(v)
	return kept, left - p.left, true
}

// pruner copies a decoded JSON value (maps, slices, strings, numbers, bools,
// nil) keeping at most left bytes of its encoding: object members in the
// order encoding/json writes them (sorted keys), strings shortened to
// maxString. cut records whether anything was left out or shortened.
type pruner struct {
	left      int
	maxString int
	cut       bool
	// measure only counts: value returns no copy, and allocates nothing
	// but the sorted keys of objects.
	measure bool
}

// value returns the kept part of v and whether any of it fits.
func (p *pruner) value(v any) (any, bool) {
	switch t := v.(type) {
	case nil:
		return p.scalar(v, 4)
	case bool:
		return p.scalar(v, 5)
	case float64:
		return p.scalar(v, 24) // the longest encoding/json writes
	case json.Number:
		return p.scalar(v, len(t))
	case string:
		s, n, c := boundString(t, min(p.maxString, p.left))
		p.cut = p.cut || c
		if n == 0 {
			return nil, false
		}
		p.left -= n
		if !c || p.measure {
			return v, true // no new interface value for a string kept whole
		}
		return s, true
	case map[string]any:
		if p.left < 2 {
			p.cut = true
			return nil, false
		}
		p.left -= 2
		var out map[string]any
		if !p.measure {
			out = make(map[string]any, min(len(t), 64))
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			kn := encodedLen(k) + 4 // quotes, colon, comma
			if kn > p.maxString || kn >= p.left {
				p.cut = true
				if p.left < 8 {
					break
				}
				continue
			}
			p.left -= kn
			cv, ok := p.value(t[k])
			if !ok {
				p.left += kn
				continue
			}
			if out != nil {
				out[k] = cv
			}
		}
		return out, true
	case []any:
		if p.left < 2 {
			p.cut = true
			return nil, false
		}
		p.left -= 2
		var out []any
		if !p.measure {
			out = make([]any, 0, min(len(t), 64))
		}
		for _, e := range t {
			if p.left < 8 {
				p.cut = true
				break
			}
			p.left-- // comma
			cv, ok := p.value(e)
			if !ok {
				p.left++
				continue
			}
			if !p.measure {
				out = append(out, cv)
			}
		}
		return out, true
	}
	// Any other type (not produced by decoding JSON): measure it.
	b, err := json.Marshal(v)
	if err != nil {
		p.cut = true
		return nil, false
	}
	return p.scalar(v, len(b))
}

func (p *pruner) scalar(v any, n int) (any, bool) {
	if n > p.left {
		p.cut = true
		return nil, false
	}
	p.left -= n
	return v, true
}

// maxRecordData bounds the data of one record the host writes: the log
// refuses a record above eventlog.MaxRecordBytes, and the record's other
// members (names, digests) need far less than the difference.
const maxRecordData = eventlog.MaxRecordBytes - 64<<10

// stageRecordData encodes r for its stage record. The bounds above keep it
// far below maxRecordData; should they ever not, the record keeps the
// verdict, reason and answer description and drops the findings and
// evidence, marked truncated: a run is recorded whatever a stage held.
func stageRecordData(r StageResult) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil || len(data) <= maxRecordData {
		return data, err
	}
	a := Answer{}
	if r.Answer != nil {
		a = *r.Answer
	}
	a.Truncated, a.Findings = true, max(a.Findings, len(r.Findings))
	r.Findings, r.Evidence, r.Answer = []abi.Finding{}, nil, &a
	return json.Marshal(r)
}

// decisionFindings returns the findings the decision record repeats: the
// first of fs whose encoding fits in MaxDecisionFindingsBytes, and whether
// any were left out. Each stage's record holds its own findings anyway.
func decisionFindings(fs []Finding) (kept []Finding, cut bool) {
	left := MaxDecisionFindingsBytes
	for i, f := range fs {
		b, err := json.Marshal(f)
		if err != nil || len(b)+1 > left {
			return fs[:i], true
		}
		left -= len(b) + 1
	}
	return fs, false
}
