package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/plugins/exec"
)

// entryHost has one accept-large pipeline per subject kind: what reaches a
// stage is accepted, so a refusal is the host's edge.
func entryHost(t *testing.T, maxBytes int) *host.Host {
	t.Helper()
	acceptLarge, err := testwasm.WAT("testdata/edge/accept-large.wat")
	require.NoError(t, err)
	stages := []host.StageConfig{{Plugin: "accept-large"}}
	return hosttest.New(t, host.Config{
		Plugins:         map[string]host.PluginConfig{"accept-large": {Module: acceptLarge}},
		MaxSubjectBytes: maxBytes,
		Pipelines: map[string]host.PipelineConfig{
			"plan":  {Subject: abi.SubjectProposal, Stages: stages},
			"call":  {Subject: abi.SubjectToolCall, Stages: stages},
			"merge": {Subject: abi.SubjectMerge, Stages: stages},
		},
	})
}

// padded returns a subject of exactly n bytes: tmpl with "@" replaced by
// as many x as it takes.
func padded(t *testing.T, tmpl string, n int) []byte {
	t.Helper()
	fill := n - (len(tmpl) - 1)
	require.Positive(t, fill)
	b := []byte(strings.Replace(tmpl, "@", strings.Repeat("x", fill), 1))
	require.Len(t, b, n)
	return b
}

// TestCheckSubjectLimit: Config.MaxSubjectBytes is the one limit on the
// input, in every format: above host/subject's own default (4 MiB) a
// subject under it is checked, and one byte over it is refused naming it.
func TestCheckSubjectLimit(t *testing.T) {
	const limit = 8 << 20
	h := entryHost(t, limit)
	tests := []struct {
		name, pipeline string
		format         subject.Format
		tmpl           string
	}{
		{"native proposal", "plan", "", `{"actions":[{"tool":"write","parameters":{"body":"@"}}]}`},
		{"native proposal, format given", "plan", subject.FormatNative, `{"actions":[{"tool":"write","parameters":{"body":"@"}}]}`},
		{"mcp proposal", "plan", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"body":"@"}}}`},
		{"openai proposal", "plan", subject.FormatOpenAI, `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"write","arguments":"{\"body\":\"@\"}"}}]}`},
		{"anthropic proposal", "plan", "", `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"write","input":{"body":"@"}}]}`},
		{"native tool call", "call", "", `{"tool":"write","parameters":{"body":"@"}}`},
		{"mcp tool call", "call", subject.FormatMCP, `{"name":"write","arguments":{"body":"@"}}`},
		{"openai tool call", "call", "", `{"type":"function_call","call_id":"c","name":"write","arguments":"{\"body\":\"@\"}"}`},
		{"anthropic tool call", "call", subject.FormatAnthropic, `{"type":"tool_use","id":"t","name":"write","input":{"body":"@"}}`},
		{"merge", "merge", "", `{"file_changes":[{"path":"a.go","after":"@"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d, err := h.Check(ctx, tc.pipeline, padded(t, tc.tmpl, 6<<20), host.RunOptions{Format: tc.format})
			require.NoError(t, err, "6 MiB under a limit of 8 MiB")
			assert.Equal(t, abi.Accepted, d.Verdict, "%+v", d.Stages)

			d, err = h.Check(ctx, tc.pipeline, padded(t, tc.tmpl, limit+1), host.RunOptions{Format: tc.format})
			require.ErrorIs(t, err, host.ErrBadSubject)
			assert.Nil(t, d, "no stage ran")
			assert.Contains(t, err.Error(), fmt.Sprintf("%d bytes exceeds the cap of %d", limit+1, limit))
		})
	}

	// The default limit is host.MaxSubjectBytes, for every format alike.
	small := entryHost(t, 0)
	for _, tc := range tests {
		_, err := small.Check(context.Background(), tc.pipeline, padded(t, tc.tmpl, host.MaxSubjectBytes+1), host.RunOptions{Format: tc.format})
		require.ErrorIs(t, err, host.ErrBadSubject, tc.name)
		assert.Contains(t, err.Error(), fmt.Sprintf("exceeds the cap of %d", host.MaxSubjectBytes), tc.name)
	}
}

// TestCheckSubjectOfAnotherKind: an input that is a valid subject of
// another kind than the pipeline's is refused saying so, in each format
// and both ways, rather than as an unrecognized format.
func TestCheckSubjectOfAnotherKind(t *testing.T) {
	h := entryHost(t, 0)
	toolCalls := map[string]string{
		"native":              `{"tool":"list_branches","parameters":{"owner":"o"}}`,
		"mcp params":          `{"name":"list_branches","arguments":{"owner":"o"}}`,
		"openai chat":         `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":\"o\"}"}}`,
		"openai responses":    `{"type":"function_call","call_id":"c","name":"list_branches","arguments":"{}"}`,
		"anthropic tool_use":  `{"type":"tool_use","id":"t","name":"list_branches","input":{"owner":"o"}}`,
		"native, format=auto": `{"id":"1","tool":"list_branches"}`,
	}
	proposals := map[string]string{
		"native empty":        `{"actions":[]}`,
		"native two actions":  `{"actions":[{"tool":"a"},{"tool":"b"}]}`,
		"mcp batch":           `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}]`,
		"openai message":      `{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"2","type":"function","function":{"name":"b","arguments":"{}"}}]}`,
		"anthropic message":   `{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"a","input":{}},{"type":"tool_use","id":"2","name":"b","input":{}}]}`,
		"openai completion":   `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"2","type":"function","function":{"name":"b","arguments":"{}"}}]}}]}`,
		"openai output items": `{"output":[{"type":"function_call","call_id":"1","name":"a","arguments":"{}"},{"type":"function_call","call_id":"2","name":"b","arguments":"{}"}]}`,
	}
	merge := `{"file_changes":[{"path":"a.go","after":"package a"}]}`
	type tcase struct {
		name, pipeline, input string
		format                subject.Format
		looks                 abi.SubjectKind
		msg                   string
	}
	var tests []tcase
	for name, in := range toolCalls {
		tests = append(tests,
			tcase{"tool call (" + name + ") to plan", "plan", in, "", abi.SubjectToolCall, "pipeline plan checks proposals; this looks like a tool call"},
			tcase{"tool call (" + name + ") to merge", "merge", in, "", abi.SubjectToolCall, "pipeline merge checks merge subjects; this looks like a tool call"})
	}
	for name, in := range proposals {
		tests = append(tests,
			tcase{"proposal (" + name + ") to call", "call", in, "", abi.SubjectProposal, "pipeline call checks tool calls; this looks like a proposal"},
			tcase{"proposal (" + name + ") to merge", "merge", in, "", abi.SubjectProposal, "pipeline merge checks merge subjects; this looks like a proposal"})
	}
	tests = append(tests,
		tcase{"native tool call, format native, to plan", "plan", toolCalls["native"], subject.FormatNative, abi.SubjectToolCall, "this looks like a tool call"},
		tcase{"native proposal, format native, to call", "call", proposals["native two actions"], subject.FormatNative, abi.SubjectProposal, "this looks like a proposal"},
		tcase{"anthropic tool call, format given, to plan", "plan", toolCalls["anthropic tool_use"], subject.FormatAnthropic, abi.SubjectToolCall, "this looks like a tool call"},
		tcase{"mcp batch, format given, to call", "call", proposals["mcp batch"], subject.FormatMCP, abi.SubjectProposal, "this looks like a proposal"},
		tcase{"merge to plan", "plan", merge, "", abi.SubjectMerge, "pipeline plan checks proposals; this looks like a merge subject"},
		tcase{"merge to call", "call", merge, "", abi.SubjectMerge, "pipeline call checks tool calls; this looks like a merge subject"},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := h.Check(context.Background(), tc.pipeline, []byte(tc.input), host.RunOptions{Format: tc.format})
			assert.Nil(t, d)
			require.ErrorIs(t, err, host.ErrBadSubject)
			require.ErrorIs(t, err, host.ErrSubjectKind)
			var se *host.SubjectError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.looks, se.Looks)
			assert.Contains(t, err.Error(), tc.msg)
			assert.NotContains(t, err.Error(), "unrecognized format")
		})
	}

	// Inputs that are no subject at all, or a broken one of the
	// pipeline's kind, are not called another kind's.
	for _, tc := range []struct{ pipeline, input string }{
		{"plan", `{"hello":"world"}`},
		{"plan", `{"actions":[{"tool":5}]}`},
		{"call", `{"role":"assistant","content":"no call"}`},
		{"call", `{"tool":7}`},
		{"merge", `{"file_changes":"x"}`},
		{"plan", `[`},
	} {
		_, err := h.Check(context.Background(), tc.pipeline, []byte(tc.input), host.RunOptions{})
		require.ErrorIs(t, err, host.ErrBadSubject, tc.input)
		assert.NotErrorIs(t, err, host.ErrSubjectKind, tc.input)
	}
}

// TestCheckFormats: the same call in every format reaches the gates as
// one native subject, and options that do not apply to the pipeline are
// refused with an *OptionError naming the field.
func TestCheckFormats(t *testing.T) {
	h := entryHost(t, 0)
	ctx := context.Background()
	calls := []struct {
		format subject.Format
		input  string
	}{
		{subject.FormatMCP, `{"name":"list_branches","arguments":{"owner":"o"}}`},
		{subject.FormatOpenAI, `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":\"o\"}"}}`},
		{subject.FormatAnthropic, `{"type":"tool_use","id":"c","name":"list_branches","input":{"owner":"o"}}`},
	}
	for _, c := range calls {
		for _, f := range []subject.Format{subject.FormatAuto, c.format} {
			d, err := h.Check(ctx, "call", []byte(c.input), host.RunOptions{Format: f})
			require.NoError(t, err, "%s as %q", c.format, f)
			assert.Equal(t, abi.Accepted, d.Verdict)
			native, err := h.NativeSubject("call", []byte(c.input), f)
			require.NoError(t, err)
			var call abi.ToolCall
			require.NoError(t, json.Unmarshal(native, &call))
			assert.Equal(t, "list_branches", call.Tool, c.format)
			assert.JSONEq(t, `{"owner":"o"}`, string(call.Parameters), c.format)
		}
		// A forced format the content is not is refused.
		other := subject.FormatMCP
		if c.format == other {
			other = subject.FormatAnthropic
		}
		_, err := h.Check(ctx, "call", []byte(c.input), host.RunOptions{Format: other})
		require.ErrorIs(t, err, host.ErrBadSubject, "%s forced as %s", c.format, other)
	}
	// A native subject reaches the gates as written, compacted.
	native, err := h.NativeSubject("call", []byte(`{ "tool": "t", "x": 1 }`), "")
	require.NoError(t, err)
	assert.Equal(t, `{"tool":"t","x":1}`, string(native))

	tests := []struct {
		name, pipeline string
		opts           host.RunOptions
		field          string
	}{
		{"agent format for merge", "merge", host.RunOptions{Format: subject.FormatMCP}, "Format"},
		{"unknown format", "plan", host.RunOptions{Format: "yaml"}, "Format"},
		{"unknown format for merge", "merge", host.RunOptions{Format: "NATIVE"}, "Format"},
		{"token for a proposal pipeline", "plan", host.RunOptions{ConfirmationToken: "ok"}, "ConfirmationToken"},
		{"token for a merge pipeline", "merge", host.RunOptions{ConfirmationToken: "ok"}, "ConfirmationToken"},
		{"padded token for a proposal pipeline", "plan", host.RunOptions{ConfirmationToken: " ok\t"}, "ConfirmationToken"},
		{"run id", "plan", host.RunOptions{RunID: "not-hex"}, "RunID"},
	}
	inputs := map[string]string{"plan": `{"actions":[]}`, "call": `{"tool":"t"}`, "merge": `{"file_changes":[{"path":"a","after":"b"}]}`}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := h.Check(ctx, tc.pipeline, []byte(inputs[tc.pipeline]), tc.opts)
			assert.Nil(t, d)
			require.ErrorIs(t, err, host.ErrBadOptions)
			var oe *host.OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.field, oe.Field)
			assert.Contains(t, err.Error(), "RunOptions."+tc.field)
			_, err = h.NativeSubject(tc.pipeline, []byte(inputs[tc.pipeline]), tc.opts.Format)
			if tc.field == "Format" {
				assert.ErrorIs(t, err, host.ErrBadOptions, "NativeSubject refuses the format too")
			}
		})
	}
	_, err = h.NativeSubject("nope", []byte(`{}`), "")
	assert.ErrorIs(t, err, host.ErrUnknownPipeline)
}

// recordingConfirmer records what it is asked and answers as the default
// does; hook, when set, runs first (inside the run).
type recordingConfirmer struct {
	mu   sync.Mutex
	reqs []host.ConfirmationRequest
	hook func(host.ConfirmationRequest)
	err  error
}

func (c *recordingConfirmer) Confirm(_ context.Context, req host.ConfirmationRequest) (*abi.Confirmation, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	hook, err := c.hook, c.err
	c.mu.Unlock()
	if hook != nil {
		hook(req)
	}
	if err != nil || req.Tool == nil {
		return nil, err
	}
	return &abi.Confirmation{Tool: req.Tool.ID, Token: req.Token}, nil
}

func (c *recordingConfirmer) last(t *testing.T) host.ConfirmationRequest {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, c.reqs, "the Confirmer was called")
	return c.reqs[len(c.reqs)-1]
}

func (c *recordingConfirmer) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reqs)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestConfirmationBoundToRunSnapshot: a confirmation token is resolved
// against the catalog snapshot the run pinned, the one its stages see,
// not against whatever the caller looked at before: the catalog changes
// between the caller's view and the run, and during the run after the pin.
// merge_pull_request needs a confirmation under hosttest.GitHubExecConfig.
func TestConfirmationBoundToRunSnapshot(t *testing.T) {
	const tool = "mcp.github:merge_pull_request"
	newSchema := `{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"squash":{"type":"boolean"}}}`
	call := []byte(`{"id":"c1","type":"function","function":{"name":"merge_pull_request","arguments":"{\"owner\":\"octo-org\",\"repo\":\"widgets\"}"}}`)
	tests := []struct {
		name string
		// before changes the catalog after the caller's view, before the run.
		before func(*catalog.Builder) error
		// during changes it from the Confirmer, after the run pinned it.
		during     func(*catalog.Builder) error
		wantTool   bool   // the Confirmer saw the tool
		wantSchema string // "" the caller's view's digest, "new" the changed one
		wantCode   string
	}{
		{name: "unchanged", wantTool: true, wantCode: string(abi.Accepted)},
		{name: "schema changed before the run", before: hosttest.ReplaceSchema(tool, newSchema), wantTool: true, wantSchema: "new",
			// The session's grant pinned the old schema: the gate sees the
			// new one, as the Confirmer did.
			wantCode: exec.CodeSchemaDigestMismatch},
		{name: "tool removed before the run", before: func(b *catalog.Builder) error { return b.Remove(tool) }, wantCode: exec.CodeUnknownTool},
		{name: "tool removed during the run", during: func(b *catalog.Builder) error { return b.Remove(tool) }, wantTool: true, wantCode: string(abi.Accepted)},
		{name: "schema changed during the run", during: hosttest.ReplaceSchema(tool, newSchema), wantTool: true, wantCode: string(abi.Accepted)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := hosttest.GitHubCatalog(t)
			conf := &recordingConfirmer{}
			h := hosttest.New(t, host.Config{
				Plugins:   map[string]host.PluginConfig{"exec": {Path: execWasm}},
				Catalog:   store,
				Confirmer: conf,
				Pipelines: map[string]host.PipelineConfig{"exec": hosttest.ExecPipeline("exec")},
			})
			_, err := session.Activate(ctx, h.Sessions(), store.Snapshot(), "dev", "merge_pull_request")
			require.NoError(t, err)

			// The caller's view.
			view := h.Catalog().Snapshot()
			viewTool, ok := view.Get("merge_pull_request")
			require.True(t, ok)
			if tc.before != nil {
				_, err := store.Update(tc.before)
				require.NoError(t, err)
			}
			pinned := store.Snapshot()
			if tc.during != nil {
				conf.hook = func(host.ConfirmationRequest) {
					_, err := store.Update(tc.during)
					assert.NoError(t, err)
				}
			}

			d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: "dev", RequestID: "r-1", ConfirmationToken: "ok-by-alice"})
			require.NoError(t, err)
			req := conf.last(t)
			assert.Equal(t, pinned.Generation(), req.CatalogGeneration, "resolved on the snapshot current when the run started")
			assert.Equal(t, d.CatalogGeneration, req.CatalogGeneration, "the snapshot the stages saw")
			if tc.during != nil {
				assert.Greater(t, store.Snapshot().Generation(), d.CatalogGeneration, "the catalog moved on during the run")
			}
			if tc.wantTool {
				require.NotNil(t, req.Tool)
				assert.Equal(t, tool, req.Tool.ID)
				wantDigest, _ := pinned.Get(tool)
				assert.Equal(t, wantDigest.SchemaDigest, req.Tool.SchemaDigest)
				if tc.wantSchema == "new" {
					assert.NotEqual(t, viewTool.SchemaDigest, req.Tool.SchemaDigest, "not the caller's stale view")
				} else {
					assert.Equal(t, viewTool.SchemaDigest, req.Tool.SchemaDigest)
				}
			} else {
				assert.Nil(t, req.Tool, "no tool in the run's snapshot, so nothing to confirm")
			}
			assert.Equal(t, tc.wantCode, hosttest.Code(d.Stages[0]), "%+v", d.Stages[0])

			// What the request binds: the run, the call, the subject as
			// recorded.
			native, err := h.NativeSubject("exec", call, "")
			require.NoError(t, err)
			assert.Equal(t, host.ConfirmationRequest{
				Pipeline: "exec", Session: "dev", RunID: d.RunID, RequestID: "r-1", ToolName: "merge_pull_request",
				Tool: req.Tool, CatalogGeneration: d.CatalogGeneration, SubjectSHA256: sha256Hex(native), Token: "ok-by-alice",
			}, req)
		})
	}
}

// TestConfirmationToken: the default resolution (no Confirmer) confirms the
// call's tool by its catalog id; a blank token is none and asks no
// Confirmer; a Confirmer's error stops the run before any stage.
func TestConfirmationToken(t *testing.T) {
	ctx := context.Background()
	store := hosttest.GitHubCatalog(t)
	h := hosttest.ExecHost(t, store, 1) // no Confirmer: the default
	_, err := session.ActivateMany(ctx, h.Sessions(), store.Snapshot(), "dev", []string{"merge_pull_request", "get_me"})
	require.NoError(t, err)
	call := func(tool string) []byte {
		return []byte(`{"tool":"` + tool + `","parameters":{"owner":"octo-org","repo":"widgets"}}`)
	}
	for _, tc := range []struct {
		name, tool, token, want string
	}{
		{"token", "merge_pull_request", "ok-by-alice", string(abi.Accepted)},
		{"no token", "merge_pull_request", "", exec.CodeConfirmationRequired},
		{"blank token", "merge_pull_request", " \t\n", exec.CodeConfirmationRequired},
		{"unknown tool", "no_such_tool", "ok-by-alice", exec.CodeUnknownTool},
	} {
		d, err := h.Check(ctx, "exec", call(tc.tool), host.RunOptions{Session: "dev", ConfirmationToken: tc.token})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, hosttest.Code(d.Stages[0]), tc.name)
	}

	boom := errors.New("approval store unavailable")
	conf := &recordingConfirmer{err: boom}
	logPath := t.TempDir() + "/events.jsonl"
	hc := hosttest.New(t, host.Config{
		Plugins:      map[string]host.PluginConfig{"exec": {Path: execWasm}},
		Catalog:      store,
		Confirmer:    conf,
		EventLogPath: logPath,
		Pipelines:    map[string]host.PipelineConfig{"exec": hosttest.ExecPipeline("exec")},
	})
	_, err = session.Activate(ctx, hc.Sessions(), store.Snapshot(), "dev", "merge_pull_request")
	require.NoError(t, err)
	d, err := hc.Check(ctx, "exec", call("merge_pull_request"), host.RunOptions{Session: "dev", ConfirmationToken: "ok"})
	assert.Nil(t, d, "no run, no decision")
	require.ErrorIs(t, err, host.ErrConfirmation)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, 1, conf.calls())
	log, err := os.ReadFile(logPath)
	if err == nil { // the log may not even exist yet
		assert.NotContains(t, string(log), `"kind":"decision"`, "nothing ran, nothing recorded")
		assert.NotContains(t, string(log), `"kind":"stage"`)
	}

	// With a working Confirmer the same log records the run.
	conf.mu.Lock()
	conf.err = nil
	conf.mu.Unlock()
	d, err = hc.Check(ctx, "exec", call("merge_pull_request"), host.RunOptions{Session: "dev", ConfirmationToken: "ok"})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Verdict)
	log, err = os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(log), `"kind":"decision"`)
	assert.Equal(t, 2, conf.calls())

	// Blank: the Confirmer is not asked, and the run happens.
	d, err = hc.Check(ctx, "exec", call("merge_pull_request"), host.RunOptions{Session: "dev", ConfirmationToken: "  "})
	require.NoError(t, err)
	assert.Equal(t, exec.CodeConfirmationRequired, hosttest.Code(d.Stages[0]))
	assert.Equal(t, 2, conf.calls())
}
