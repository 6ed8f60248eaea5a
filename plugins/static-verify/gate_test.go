package staticverify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

const (
	catalogDir = "../../testdata/catalogs/github-mcp-server"
	casesDir   = "../../testdata/static-verify/cases"
	benchFile  = "../../testdata/static-verify/bench-10-actions.json"
	// catalogGeneration is what the test host and requests report.
	catalogGeneration = 7
)

// gateCase is one file of testdata/static-verify/cases; README.md there
// describes the format.
type gateCase struct {
	Note    string          `json:"note"`
	Subject json.RawMessage `json:"subject"`
	Config  json.RawMessage `json:"config,omitempty"`
	Granted *[]string       `json:"granted,omitempty"`
	// InvalidSubject: the subject violates the ABI's proposal schema, so a
	// host refuses it before any stage runs; the gate must still block it.
	InvalidSubject bool          `json:"invalid_subject,omitempty"`
	WantVerdict    abi.Verdict   `json:"want_verdict"`
	WantReason     string        `json:"want_reason,omitempty"`
	WantCodes      []string      `json:"want_codes"`
	WantFindings   []wantFinding `json:"want_findings,omitempty"`
}

// wantFinding lists fields a finding must have; absent fields are not
// checked, and "" for path or suggestion means "absent".
type wantFinding struct {
	Code        string  `json:"code"`
	ActionIndex *int    `json:"action_index,omitempty"`
	Path        *string `json:"path,omitempty"`
	Keyword     string  `json:"keyword,omitempty"`
	Suggestion  *string `json:"suggestion,omitempty"`
	Severity    string  `json:"severity,omitempty"`
	Tier        string  `json:"tier,omitempty"`
}

func (w wantFinding) matches(f abi.Finding) bool {
	if f.Code != w.Code {
		return false
	}
	if (w.ActionIndex == nil) != (f.ActionIndex == nil) || (w.ActionIndex != nil && *w.ActionIndex != *f.ActionIndex) {
		return false
	}
	return (w.Path == nil || *w.Path == f.Path) &&
		(w.Keyword == "" || w.Keyword == f.Keyword) &&
		(w.Suggestion == nil || *w.Suggestion == f.Suggestion) &&
		(w.Severity == "" || w.Severity == string(f.Severity)) &&
		(w.Tier == "" || w.Tier == string(f.Tier))
}

var (
	catalogOnce  sync.Once
	catalogTools []abi.Tool
	catalogErr   error
)

// githubCatalog loads the GitHub MCP server's tools as catalog records:
// id mcp.github:<name>, the MCP inputSchema as input_schema, and the
// SHA-256 of the schema bytes as a stand-in digest.
func githubCatalog(tb testing.TB) []abi.Tool {
	tb.Helper()
	catalogOnce.Do(func() {
		files, err := filepath.Glob(filepath.Join(catalogDir, "*.json"))
		if err != nil || len(files) == 0 {
			catalogErr = fmt.Errorf("no tool files in %s: %v", catalogDir, err)
			return
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				catalogErr = err
				return
			}
			var mcp struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if err := json.Unmarshal(b, &mcp); err != nil {
				catalogErr = fmt.Errorf("%s: %v", f, err)
				return
			}
			sum := sha256.Sum256(mcp.InputSchema)
			catalogTools = append(catalogTools, abi.Tool{
				ID:           "mcp.github:" + mcp.Name,
				Name:         mcp.Name,
				Description:  mcp.Description,
				InputSchema:  mcp.InputSchema,
				SchemaDigest: hex.EncodeToString(sum[:]),
				Provenance:   "mcp_config{github}",
				Source:       "github",
			})
		}
	})
	require.NoError(tb, catalogErr)
	return catalogTools
}

func newHost(tb testing.TB) *gatetest.Host {
	h := gatetest.NewHost(githubCatalog(tb)...)
	h.Generation = catalogGeneration
	return h
}

func request(subject, config json.RawMessage) abi.Request {
	return abi.Request{
		SubjectKind: abi.SubjectProposal,
		Subject:     subject,
		Config:      config,
		Context:     abi.Context{CatalogGeneration: catalogGeneration, Capabilities: []string{"catalog"}},
	}
}

func loadCases(t *testing.T) map[string]gateCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	cases := map[string]gateCase{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var c gateCase
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		require.NoError(t, d.Decode(&c), f)
		require.NotEmpty(t, c.Note, f)
		require.True(t, c.WantVerdict.Valid(), "%s: want_verdict", f)
		cases[strings.TrimSuffix(filepath.Base(f), ".json")] = c
	}
	return cases
}

func TestCases(t *testing.T) {
	cases := loadCases(t)
	covered := map[string]bool{}
	for name, c := range cases {
		for _, code := range c.WantCodes {
			covered[code] = true
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			schemaErr := abischema.Validate(abi.SchemaProposal, c.Subject)
			assert.Equal(t, c.InvalidSubject, schemaErr != nil, "invalid_subject disagrees with the proposal schema: %v", schemaErr)
			h := newHost(t)
			if c.Granted != nil {
				h.Granted = *c.Granted
			}
			resp, err := gatetest.Evaluate(context.Background(), Gate, request(c.Subject, c.Config), h)
			require.NoError(t, err)
			got, _ := json.MarshalIndent(resp, "", "  ")

			assert.Equal(t, c.WantVerdict, resp.Verdict, "%s\n%s", c.Note, got)
			if c.WantReason != "" {
				assert.Equal(t, c.WantReason, resp.Reason, "%s", got)
			}
			codes := []string{}
			for _, f := range resp.Findings {
				codes = append(codes, f.Code)
			}
			slices.Sort(codes)
			assert.Equal(t, c.WantCodes, codes, "%s\n%s", c.Note, got)
			for _, w := range c.WantFindings {
				ok := slices.ContainsFunc(resp.Findings, w.matches)
				wj, _ := json.Marshal(w)
				assert.True(t, ok, "no finding matches %s\n%s", wj, got)
			}
			checkWellFormed(t, resp)
			if resp.Verdict == abi.Accepted {
				assert.Equal(t, "verified", resp.Basis)
				assert.Equal(t, float64(catalogGeneration), resp.Evidence["catalog_generation"])
				assert.NotNil(t, resp.Evidence["tools_checked"])
			}

			// Equal input, equal output.
			again, err := gatetest.Evaluate(context.Background(), Gate, request(c.Subject, c.Config), h)
			require.NoError(t, err)
			assert.Equal(t, resp, again)
		})
	}
	t.Run("coverage", func(t *testing.T) {
		for code := range checkOrder {
			assert.True(t, covered[code], "no case expects %s", code)
		}
	})
}

// checkWellFormed checks the invariants every response of this gate keeps.
func checkWellFormed(t *testing.T, resp abi.Response) {
	t.Helper()
	blocking := false
	prev, prevOrder := -1, -1
	for _, f := range resp.Findings {
		assert.NotEmpty(t, f.Code)
		assert.NotEmpty(t, f.Message, f.Code)
		assert.NotEmpty(t, f.Tier, f.Code)
		assert.Contains(t, checkOrder, f.Code)
		if f.Code == CodeTooManyActions {
			assert.Nil(t, f.ActionIndex)
		} else {
			assert.NotNil(t, f.ActionIndex, f.Code)
		}
		blocking = blocking || f.Severity == abi.Blocking
		idx := -1
		if f.ActionIndex != nil {
			idx = *f.ActionIndex
		}
		assert.True(t, idx > prev || (idx == prev && checkOrder[f.Code] >= prevOrder), "findings out of order at %s", f.Code)
		prev, prevOrder = idx, checkOrder[f.Code]
	}
	switch resp.Verdict {
	case abi.Accepted:
		assert.False(t, blocking)
		assert.NotEmpty(t, resp.Evidence)
	case abi.Rejected:
		assert.True(t, blocking)
	}
}

// TestBlockedEffectsNotApplied is the origin's bug, spelled out: the
// precondition finding must exist and say why.
func TestBlockedEffectsNotApplied(t *testing.T) {
	subject := `{"actions": [
		{"id": "a", "tool": "nope", "expected_effects": {"ready": true}},
		{"id": "b", "tool": "get_me", "preconditions": [{"key": "ready", "value": true}]}]}`
	resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(subject), nil), newHost(t))
	require.NoError(t, err)
	require.Equal(t, abi.Rejected, resp.Verdict)
	require.Len(t, resp.Findings, 2)
	f := resp.Findings[1]
	assert.Equal(t, CodeUnsatisfiedPrecondition, f.Code)
	assert.Equal(t, 1, *f.ActionIndex)
	assert.Equal(t, "b", f.ActionID)
	assert.Contains(t, f.Message, "blocked action(s) 0")
	assert.Equal(t, []any{float64(0)}, f.Details["declared_by_blocked_actions"])
}

func TestCatalogDenied(t *testing.T) {
	h := newHost(t)
	h.Granted = nil
	resp, err := gatetest.Evaluate(context.Background(), Gate,
		request(json.RawMessage(`{"actions":[{"tool":"get_me"}]}`), nil), h)
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, resp.Verdict)
	assert.Equal(t, sdk.ReasonGateError, resp.Reason)
	assert.Contains(t, resp.Evidence["error"], "capability_denied")

	// The error wraps sdk.ErrCapabilityDenied for callers that inspect it.
	_, err = evaluate(context.Background(), sdk.Request{
		Request: request(json.RawMessage(`{"actions":[{"tool":"get_me"}]}`), nil), Host: h})
	require.ErrorIs(t, err, sdk.ErrCapabilityDenied)
}

// A catalog that denies only listing: lookups work, so a proposal whose
// tools all exist is still checked; an unknown tool needs the list for a
// suggestion, and the gate then fails closed rather than skip it.
func TestCatalogListFailureIsInconclusive(t *testing.T) {
	h := &listDenied{Host: newHost(t)}
	resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(`{"actions":[{"tool":"get_me"}]}`), nil), h)
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, resp.Verdict)
	assert.Zero(t, h.lists)

	resp, err = gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(`{"actions":[{"tool":"get_mee"}]}`), nil), h)
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, resp.Verdict)
}

type listDenied struct {
	*gatetest.Host
	lists int
}

func (h *listDenied) Call(op string, req []byte) ([]byte, error) {
	if op == abi.OpCatalogList {
		h.lists++
		return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: "list is down"}
	}
	return h.Host.Call(op, req)
}

// countingHost counts capability calls.
type countingHost struct {
	*gatetest.Host
	mu    sync.Mutex
	calls map[string]int
}

func (h *countingHost) Call(op string, req []byte) ([]byte, error) {
	h.mu.Lock()
	if h.calls == nil {
		h.calls = map[string]int{}
	}
	h.calls[op]++
	h.mu.Unlock()
	return h.Host.Call(op, req)
}

// Each tool name is looked up once, and the catalog is listed once, only
// when an unknown tool needs a suggestion; each call of a known tool is
// validated once, all in one schema.validate_many call.
func TestCatalogCallsAreBounded(t *testing.T) {
	h := &countingHost{Host: newHost(t)}
	subject := `{"actions":[{"tool":"get_me"},{"tool":"get_me"},{"tool":"nope1"},{"tool":"nope2"},{"tool":"nope1"}]}`
	resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(subject), nil), h)
	require.NoError(t, err)
	assert.Equal(t, abi.Rejected, resp.Verdict)
	assert.Equal(t, map[string]int{abi.OpCatalogGet: 3, abi.OpCatalogList: 1, abi.OpSchemaValidateMany: 1}, h.calls)

	h = &countingHost{Host: newHost(t)}
	_, err = gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(`{"actions":[{"tool":"get_me"}]}`), nil), h)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{abi.OpCatalogGet: 1, abi.OpSchemaValidate: 1}, h.calls)
}

func TestEvidence(t *testing.T) {
	b, err := os.ReadFile(benchFile)
	require.NoError(t, err)
	resp, err := gatetest.Evaluate(context.Background(), Gate, request(b, nil), newHost(t))
	require.NoError(t, err)
	require.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
	assert.Equal(t, "verified", resp.Basis)
	assert.Equal(t, float64(10), resp.Evidence["actions"])
	assert.Equal(t, float64(catalogGeneration), resp.Evidence["catalog_generation"])
	checks := resp.Evidence["checks"].(map[string]any)
	for _, k := range []string{"tool_existence", "parameter_schema", "forward_model"} {
		assert.Equal(t, "ran", checks[k], k)
	}
	tools := resp.Evidence["tools_checked"].([]any)
	assert.Len(t, tools, 10)
	assert.True(t, slices.IsSortedFunc(tools, func(a, b any) int { return strings.Compare(a.(string), b.(string)) }))
	assert.Contains(t, tools, "mcp.github:create_pull_request")
}

func TestBadRequests(t *testing.T) {
	h := newHost(t)
	for name, tc := range map[string]struct {
		req abi.Request
	}{
		"wrong subject kind": {abi.Request{SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{"name":"get_me"}`)}},
		"actions not array":  {request(json.RawMessage(`{"actions":{}}`), nil)},
		"unknown config key": {request(json.RawMessage(`{"actions":[]}`), json.RawMessage(`{"max_action":3}`))},
		"config below bound": {request(json.RawMessage(`{"actions":[]}`), json.RawMessage(`{"repeated_call_threshold":1}`))},
		"config not integer": {request(json.RawMessage(`{"actions":[]}`), json.RawMessage(`{"max_actions":1.5}`))},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := gatetest.Evaluate(context.Background(), Gate, tc.req, h)
			require.NoError(t, err)
			assert.Equal(t, abi.Inconclusive, resp.Verdict)
			assert.Equal(t, sdk.ReasonGateError, resp.Reason)
		})
	}
}

// A catalog schema that does not compile means the gate cannot check the
// tool: inconclusive, never a pass and never a finding against the agent.
func TestUncompilableSchemaIsInconclusive(t *testing.T) {
	for name, schema := range map[string]string{
		"bad type":    `{"type": "objekt"}`,
		"remote $ref": `{"$ref": "https://example.com/schema.json"}`,
		"bad regex":   `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			h := gatetest.NewHost(abi.Tool{ID: "x:t", Name: "t", InputSchema: json.RawMessage(schema), SchemaDigest: "not-a-digest-" + name})
			resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(`{"actions":[{"tool":"t","parameters":{"a":"b"}}]}`), nil), h)
			require.NoError(t, err)
			assert.Equal(t, abi.Inconclusive, resp.Verdict)
			assert.Equal(t, sdk.ReasonGateError, resp.Reason)
		})
	}
}

// Whatever goes wrong with schema.validate, the gate is inconclusive: a
// refusal, an error, or an answer it cannot trust is never a pass.
func TestSchemaAnswerFailuresAreInconclusive(t *testing.T) {
	for name, op := range map[string]gatetest.Operation{
		"unavailable": func([]byte) (any, error) { return nil, errors.New("compiler down") },
		"bad request": func([]byte) (any, error) {
			return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: "no"}
		},
		"tool not found": func([]byte) (any, error) { return abi.SchemaValidateAnswer{Found: false}, nil },
		"another schema": func([]byte) (any, error) {
			return abi.SchemaValidateAnswer{Found: true, SchemaDigest: strings.Repeat("0", 64), Valid: true}, nil
		},
		"valid with findings": func([]byte) (any, error) {
			return abi.SchemaValidateAnswer{Found: true, Valid: true, Findings: []abi.SchemaFinding{{Keyword: "type", Message: "m"}}}, nil
		},
		"not an answer": func([]byte) (any, error) { return []int{1}, nil },
	} {
		// One action (schema.validate) and three (schema.validate_many,
		// whose items the test host answers as schema.validate).
		for _, subject := range []string{`{"actions":[{"tool":"get_me"}]}`, `{"actions":[{"tool":"get_me"},{"tool":"get_me"},{"tool":"get_me"}]}`} {
			t.Run(name, func(t *testing.T) {
				h := newHost(t)
				h.Operations = map[string]gatetest.Operation{abi.OpSchemaValidate: op}
				resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(subject), nil), h)
				require.NoError(t, err)
				assert.Equal(t, abi.Inconclusive, resp.Verdict)
				assert.Equal(t, sdk.ReasonGateError, resp.Reason)
				assert.Contains(t, resp.Evidence["error"], "validating parameters")
			})
		}
	}
}

// Pointers into property names that need escaping, and a nested array.
func TestSchemaViolationPointers(t *testing.T) {
	schema := `{"type":"object","properties":{
		"a/b": {"type":"string"},
		"m~n": {"type":"array","items":{"type":"object","required":["x y"],"properties":{"x y":{"type":"integer"}}}},
		"type": {"enum":["a"]}
	}}`
	h := gatetest.NewHost(abi.Tool{ID: "x:t", Name: "t", InputSchema: json.RawMessage(schema)})
	subject := `{"actions":[{"tool":"t","parameters":{"a/b":1,"m~n":[{"x y":1},{"x y":"s"},{}],"type":"b"}}]}`
	resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(subject), nil), h)
	require.NoError(t, err)
	require.Equal(t, abi.Rejected, resp.Verdict)
	type pk struct{ path, keyword string }
	var got []pk
	for _, f := range resp.Findings {
		got = append(got, pk{f.Path, f.Keyword})
	}
	assert.Equal(t, []pk{{"/a~1b", "type"}, {"/m~0n/1/x y", "type"}, {"/m~0n/2", "required"}, {"/type", "enum"}}, got)
	assert.Contains(t, resp.Findings[2].Message, "x y")
}

// Messages name the violated bound but never echo the offending value.
func TestSchemaMessagesDoNotEchoInput(t *testing.T) {
	schema := `{"type":"object","properties":{
		"n": {"type":"number","minimum":10,"multipleOf":3},
		"e": {"type":"string","format":"email"},
		"c": {"const":"fixed"}
	}}`
	h := gatetest.NewHost(abi.Tool{ID: "x:t", Name: "t", InputSchema: json.RawMessage(schema)})
	subject := `{"actions":[{"tool":"t","parameters":{"n":7.77,"e":"s3cr3t-token","c":"s3cr3t-token"}}]}`
	resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(subject), nil), h)
	require.NoError(t, err)
	require.Len(t, resp.Findings, 4)
	for _, f := range resp.Findings {
		assert.NotContains(t, f.Message, "s3cr3t", f.Keyword)
		assert.NotContains(t, f.Message, "7.77", f.Keyword)
	}
}

func FuzzEvaluate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(casesDir, "*.json"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var c gateCase
		if err := json.Unmarshal(b, &c); err == nil {
			f.Add([]byte(c.Subject))
		}
	}
	f.Add([]byte(`{"actions":[{"tool":"get_me","depends_on":[-1,0,99],"preconditions":[{"key":"","operator":"gt","value":null}]}]}`))
	f.Add([]byte(`{"actions":[{"tool":"issue_read","parameters":{"issue_number":1e999999999}}]}`))
	h := newHost(f)
	f.Fuzz(func(t *testing.T, subject []byte) {
		if !json.Valid(subject) {
			subject, _ = json.Marshal(string(subject)) // still a JSON value, so the request encodes
		}
		resp, err := gatetest.Evaluate(context.Background(), Gate, request(subject, nil), h)
		require.NoError(t, err) // the response always satisfies the ABI schema
		require.NotEqual(t, sdk.ReasonGatePanic, resp.Reason, "%v", resp.Evidence)
		if resp.Verdict == abi.Accepted {
			for _, fd := range resp.Findings {
				require.NotEqual(t, abi.Blocking, fd.Severity)
			}
		}
	})
}

// BenchmarkEvaluateNative times the SDK's handler on the 10-action proposal
// (decode request, evaluate, encode response), as the guest runs it, with
// the schema cache warm. "gatetest" includes the in-memory host encoding
// every catalog answer; "memo" replays pre-encoded answers, as a host that
// keeps encoded records would, so it times the gate's side alone.
func BenchmarkEvaluateNative(b *testing.B) {
	subject, err := os.ReadFile(benchFile)
	require.NoError(b, err)
	req := request(subject, nil)
	req.ABIVersion, req.RunID, req.Stage, req.Context.Now = abi.MajorVersion, "bench", "static-verify", "2026-01-01T00:00:00Z"
	body, err := json.Marshal(req)
	require.NoError(b, err)
	for _, tc := range []struct {
		name string
		host sdk.Host
	}{
		{"gatetest", newHost(b)},
		{"memo", &memoHost{Host: newHost(b), answers: map[string][]byte{}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := Gate
			out := sdk.Handle(context.Background(), &g, tc.host, body)
			require.Contains(b, string(out), `"verdict":"accepted"`)
			b.SetBytes(int64(len(subject)))
			b.ReportAllocs()
			for b.Loop() {
				sdk.Handle(context.Background(), &g, tc.host, body)
			}
		})
	}
}

// memoHost replays the encoded answer of an earlier identical call.
type memoHost struct {
	*gatetest.Host
	answers map[string][]byte
}

func (h *memoHost) Call(op string, req []byte) ([]byte, error) {
	k := op + "\x00" + string(req)
	if a, ok := h.answers[k]; ok {
		return a, nil
	}
	a, err := h.Host.Call(op, req)
	if err == nil {
		h.answers[k] = a
	}
	return a, err
}

// Only the first maxSuggestions distinct unknown names get a suggestion,
// which bounds the work of a proposal full of bogus names.
func TestSuggestionsAreBounded(t *testing.T) {
	var acts []string
	for i := range maxSuggestions + 4 {
		acts = append(acts, fmt.Sprintf(`{"tool":"get_me%d"},{"tool":"get_me%d"}`, i, i))
	}
	subject := `{"actions":[` + strings.Join(acts, ",") + `]}`
	resp, err := gatetest.Evaluate(context.Background(), Gate, request(json.RawMessage(subject), json.RawMessage(`{"repeated_call_threshold":3}`)), newHost(t))
	require.NoError(t, err)
	require.Len(t, resp.Findings, 2*(maxSuggestions+4))
	for k, f := range resp.Findings {
		if k/2 < maxSuggestions {
			assert.Equal(t, "get_me", f.Suggestion, k)
		} else {
			assert.Empty(t, f.Suggestion, k)
		}
	}
}
