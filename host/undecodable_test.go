package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// goodArgs are list_branches arguments every gate of undecodableHost accepts.
const goodArgs = `{"owner":"octo-org","repo":"widgets"}`

// undecodableCall is one tool call in some agent format, with arguments
// the host cannot decode (or, for the controls, can).
type undecodableCall struct {
	name   string
	format subject.Format
	input  string // one call; %s is replaced by nothing, it is literal
	// decodable marks a control: the same shape with arguments the host
	// decodes, which the pipelines accept (so the test can fail).
	decodable bool
}

// undecodableCalls are the shapes: every way an agent's arguments can fail
// to be one JSON object, in every input format. (The first comes from the
// failing case testdata/edge/openai-invalid-json.json.)
var undecodableCalls = []undecodableCall{
	// OpenAI Chat Completions: arguments is a JSON string holding an object.
	{name: "openai invalid JSON", format: subject.FormatOpenAI, input: `{"id":"call_1","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":"}}`},
	{name: "openai trailing data", format: subject.FormatOpenAI, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":\"o\",\"repo\":\"r\"} x"}}`},
	{name: "openai two objects", format: subject.FormatOpenAI, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":\"o\",\"repo\":\"r\"}{\"owner\":\"p\"}"}}`},
	{name: "openai null", format: subject.FormatOpenAI, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"null"}}`},
	{name: "openai array", format: subject.FormatOpenAI, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"[{\"owner\":\"o\"}]"}}`},
	{name: "openai string", format: subject.FormatOpenAI, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"\"owner\""}}`},
	{name: "openai number", format: subject.FormatOpenAI, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"42"}}`},
	{name: "openai arguments not a string", format: subject.FormatOpenAI, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":{"owner":"o","repo":"r"}}}`},
	{name: "openai responses item invalid JSON", format: subject.FormatOpenAI, input: `{"type":"function_call","call_id":"c","name":"list_branches","arguments":"{"}`},
	{name: "openai responses item array", format: subject.FormatOpenAI, input: `{"type":"function_call","call_id":"c","name":"list_branches","arguments":"[]"}`},
	{name: "openai message", format: subject.FormatOpenAI, input: `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":\"o\""}}]}`},
	{name: "openai control", format: subject.FormatOpenAI, decodable: true, input: `{"id":"c","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":\"octo-org\",\"repo\":\"widgets\"}"}}`},
	// Anthropic: input is an object.
	{name: "anthropic input string", format: subject.FormatAnthropic, input: `{"type":"tool_use","id":"t","name":"list_branches","input":"{\"owner\":\"o\"}"}`},
	{name: "anthropic input null", format: subject.FormatAnthropic, input: `{"type":"tool_use","id":"t","name":"list_branches","input":null}`},
	{name: "anthropic input missing", format: subject.FormatAnthropic, input: `{"type":"tool_use","id":"t","name":"list_branches"}`},
	{name: "anthropic input array", format: subject.FormatAnthropic, input: `{"type":"tool_use","id":"t","name":"list_branches","input":[]}`},
	{name: "anthropic message", format: subject.FormatAnthropic, input: `{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"list_branches","input":true}]}`},
	{name: "anthropic control", format: subject.FormatAnthropic, decodable: true, input: `{"type":"tool_use","id":"t","name":"list_branches","input":` + goodArgs + `}`},
	// MCP: arguments is an object (absent or null means {}).
	{name: "mcp arguments string", format: subject.FormatMCP, input: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_branches","arguments":"{}"}}`},
	{name: "mcp arguments array", format: subject.FormatMCP, input: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_branches","arguments":[1]}}`},
	{name: "mcp arguments number", format: subject.FormatMCP, input: `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"list_branches","arguments":0}}`},
	{name: "mcp arguments false", format: subject.FormatMCP, input: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_branches","arguments":false}}`},
	{name: "mcp control", format: subject.FormatMCP, decodable: true, input: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_branches","arguments":` + goodArgs + `}}`},
	// Native subjects that carry parse_error themselves: the flag counts
	// whatever the caller wrote next to it.
	{name: "native parse_error", format: subject.FormatNative, input: `{"id":"n","tool":"list_branches","parse_error":"arguments is not valid JSON"}`},
	{name: "native parse_error empty", format: subject.FormatNative, input: `{"id":"n","tool":"list_branches","parse_error":""}`},
	{name: "native parse_error with parameters", format: subject.FormatNative, input: `{"id":"n","tool":"list_branches","parameters":` + goodArgs + `,"parse_error":"x"}`},
	{name: "native control", format: subject.FormatNative, decodable: true, input: `{"id":"n","tool":"list_branches","parameters":` + goodArgs + `}`},
}

// undecodableHost has, for each subject kind, pipelines whose gates would
// accept list_branches with good arguments: exec alone, the accept-all gate
// (which never reads parameters), static-verify, and static-verify with
// preconditions.
func undecodableHost(t *testing.T, logPath string) *host.Host {
	t.Helper()
	acceptAll, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	store := hosttest.GitHubCatalog(t)
	var db map[string]map[string]any
	require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, "testdata/domains/github-bench/db.json"), &db))
	exec := hosttest.ExecStage("exec")
	exec.Name = "exec"
	accept := host.StageConfig{Name: "accept-all", Plugin: "accept-all"}
	sv := host.StageConfig{Name: "static-verify", Plugin: "static-verify", Capabilities: []string{"catalog", "schema"}}
	pre := host.StageConfig{Name: "preconditions", Plugin: "preconditions", Capabilities: []string{"query"}, Config: json.RawMessage(`{"domain":"github"}`)}
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{
			"exec": {Path: execWasm}, "accept-all": {Module: acceptAll},
			"static-verify": {Path: staticVerifyWasm}, "preconditions": {Path: hosttest.PreconditionsWasm(t)},
		},
		Catalog:      store,
		Domains:      map[string]host.Domain{"github": {Catalog: hosttest.LoadCatalog(t, "testdata/domains/github-bench/domain.yaml"), Source: hosttest.Docs(db)}},
		EventLogPath: logPath,
		Pipelines: map[string]host.PipelineConfig{
			"call-exec":              {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{exec}},
			"call-accept-all":        {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{accept}},
			"call-exec-accept-all":   {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{exec, accept}},
			"plan-accept-all":        {Subject: abi.SubjectProposal, Stages: []host.StageConfig{accept}},
			"plan-static-verify":     {Subject: abi.SubjectProposal, Stages: []host.StageConfig{sv}},
			"plan-sv-preconditions":  {Subject: abi.SubjectProposal, Stages: []host.StageConfig{sv, pre}},
			"plan-preconditions":     {Subject: abi.SubjectProposal, Stages: []host.StageConfig{pre}},
			"plan-advisory-stop":     {Subject: abi.SubjectProposal, StopOnReject: true, Stages: []host.StageConfig{{Name: "advice", Plugin: "accept-all", Mode: host.Advisory}, accept}},
			"plan-accept-all-twice":  {Subject: abi.SubjectProposal, Stages: []host.StageConfig{accept, {Name: "again", Plugin: "accept-all"}}},
			"plan-preconditions-all": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{pre, {Name: "again", Plugin: "accept-all"}}},
		},
	})
	_, err = session.ActivateMany(context.Background(), h.Sessions(), store.Snapshot(), "s", []string{"list_branches"})
	require.NoError(t, err)
	return h
}

// undecodableFindings returns the host's undecodable_arguments findings.
func undecodableFindings(d *host.Decision) []host.Finding {
	var out []host.Finding
	for _, f := range d.Findings {
		if f.Code == host.CodeUndecodableArguments {
			out = append(out, f)
		}
	}
	return out
}

// TestUndecodableNeverAccepted: no pipeline, whatever its gates, accepts a
// subject the host flagged as undecodable, in any format, as a tool_call
// subject or as any action of a proposal. The decodable controls are
// accepted by the same pipelines, so the rule is what refuses the others.
func TestUndecodableNeverAccepted(t *testing.T) {
	h := undecodableHost(t, "")
	ctx := context.Background()
	callPipelines := []string{"call-exec", "call-accept-all", "call-exec-accept-all"}
	planPipelines := []string{"plan-accept-all", "plan-static-verify", "plan-sv-preconditions", "plan-preconditions", "plan-advisory-stop", "plan-accept-all-twice", "plan-preconditions-all"}

	for _, c := range undecodableCalls {
		t.Run(c.name, func(t *testing.T) {
			call, _, err := subject.ParseToolCall([]byte(c.input), c.format)
			require.NoError(t, err)
			assert.Equal(t, !c.decodable, call.ParseError != "" || strings.Contains(c.input, `"parse_error"`), "the parser's flag")
			native, err := json.Marshal(call)
			require.NoError(t, err)
			if c.format == subject.FormatNative {
				native = []byte(c.input) // as the caller wrote it, "parse_error":"" included
			}
			for _, p := range callPipelines {
				d, err := h.Check(ctx, p, native, host.RunOptions{Session: "s"})
				require.NoError(t, err, p)
				if c.decodable {
					assert.Equal(t, abi.Accepted, d.Verdict, "%s: control %v", p, d.Stages)
					assert.Empty(t, undecodableFindings(d), p)
					continue
				}
				assert.Equal(t, abi.Rejected, d.Verdict, p)
				fs := undecodableFindings(d)
				require.Len(t, fs, 1, p)
				assert.Equal(t, host.HostStage, fs[0].Stage)
				assert.Equal(t, abi.Blocking, fs[0].Severity)
				assert.Nil(t, fs[0].ActionIndex, "a tool_call subject has no action index")
				assert.Equal(t, call.ID, fs[0].ActionID)
				assert.Contains(t, fs[0].Message, "list_branches")
			}

			// The call as action 1 of a proposal, after a good action, in
			// the native form the CLI sends.
			bad := abi.Action{ID: call.ID, Type: abi.ActionToolCall, Tool: call.Tool, Parameters: call.Parameters, ParseError: call.ParseError}
			good := abi.Action{ID: "first", Type: abi.ActionToolCall, Tool: "list_branches", Parameters: json.RawMessage(goodArgs)}
			plan, err := json.Marshal(abi.Proposal{Actions: []abi.Action{good, bad}})
			require.NoError(t, err)
			if c.format == subject.FormatNative {
				plan = []byte(`{"actions":[{"id":"first","tool":"list_branches","parameters":` + goodArgs + `},` + c.input + `]}`)
			}
			for _, p := range planPipelines {
				d, err := h.Check(ctx, p, plan, host.RunOptions{Session: "s"})
				require.NoError(t, err, p)
				if c.decodable {
					assert.Equal(t, abi.Accepted, d.Verdict, "%s: control %v", p, d.Stages)
					continue
				}
				assert.Equal(t, abi.Rejected, d.Verdict, p)
				fs := undecodableFindings(d)
				require.Len(t, fs, 1, p)
				require.NotNil(t, fs[0].ActionIndex)
				assert.Equal(t, 1, *fs[0].ActionIndex, "names the action")
				assert.Equal(t, host.HostStage, fs[0].Stage)
			}
		})
	}
}

// TestUndecodableAgentProposals: proposals in the agent formats, parsed as
// the CLI and the HTTP API parse them, with the undecodable call at
// various positions; every flagged action gets its own finding.
func TestUndecodableAgentProposals(t *testing.T) {
	h := undecodableHost(t, "")
	tests := []struct {
		name   string
		input  string
		badIdx []int
	}{
		{"openai message, second call", `{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"list_branches","arguments":"` + strings.ReplaceAll(goodArgs, `"`, `\"`) + `"}},{"id":"b","type":"function","function":{"name":"list_branches","arguments":"{\"owner\":"}}]}`, []int{1}},
		{"openai chat completion", `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"list_branches","arguments":"null"}}]}}]}`, []int{0}},
		{"openai responses output, two bad", `{"output":[{"type":"function_call","call_id":"a","name":"list_branches","arguments":"[]"},{"type":"message"},{"type":"function_call","call_id":"b","name":"list_branches","arguments":"{}{}"}]}`, []int{0, 1}},
		{"anthropic message", `{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"list_branches","input":` + goodArgs + `},{"type":"tool_use","id":"b","name":"list_branches","input":"x"}]}`, []int{1}},
		{"mcp batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_branches","arguments":[]}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_branches","arguments":` + goodArgs + `}}]`, []int{0}},
		{"native, every action", `{"actions":[{"tool":"list_branches","parse_error":"a"},{"type":"state_read","parse_error":"b"},{"tool":"list_branches","parse_error":""}]}`, []int{0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _, err := subject.ParseProposal([]byte(tc.input), subject.FormatAuto)
			require.NoError(t, err)
			native, err := json.Marshal(p)
			require.NoError(t, err)
			if strings.HasPrefix(tc.input, `{"actions"`) {
				native = []byte(tc.input)
			}
			for _, pl := range []string{"plan-accept-all", "plan-static-verify", "plan-sv-preconditions"} {
				d, err := h.Check(context.Background(), pl, native, host.RunOptions{})
				require.NoError(t, err)
				assert.Equal(t, abi.Rejected, d.Verdict, pl)
				var got []int
				for _, f := range undecodableFindings(d) {
					require.NotNil(t, f.ActionIndex)
					got = append(got, *f.ActionIndex)
				}
				assert.Equal(t, tc.badIdx, got, pl)
			}
		})
	}
}

// TestUndecodableRecorded: the rejection is recorded in the event log like
// any decision, with the host's finding in the decision record.
func TestUndecodableRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	h := undecodableHost(t, path)
	d, err := h.Check(context.Background(), "call-exec", []byte(`{"id":"c","tool":"list_branches","parse_error":"arguments is not valid JSON"}`), host.RunOptions{Session: "s", RequestID: "r1"})
	require.NoError(t, err)
	assert.Equal(t, abi.Rejected, d.Verdict)
	assert.Equal(t, abi.Accepted, d.Stages[0].Verdict, "exec alone never looks at parameters")

	_, err = eventlog.Verify(path, eventlog.VerifyOptions{})
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	var rec eventlog.Record
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	assert.Equal(t, "decision", rec.Kind)
	assert.Equal(t, "rejected", rec.Verdict)
	assert.Equal(t, "r1", rec.RequestID)
	assert.Contains(t, string(rec.Data), `"code":"`+host.CodeUndecodableArguments+`"`)
}

// TestCheckProposalUndecodable: the library's typed entry point is bound
// by the same rule.
func TestCheckProposalUndecodable(t *testing.T) {
	h := undecodableHost(t, "")
	d, err := h.CheckProposal(context.Background(), "plan-accept-all", abi.Proposal{Actions: []abi.Action{{Tool: "list_branches", ParseError: "arguments must be a JSON object, got array"}}}, host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Rejected, d.Verdict)
	require.Len(t, undecodableFindings(d), 1)
	assert.Contains(t, d.Findings[len(d.Findings)-1].Message, "got array")
}
