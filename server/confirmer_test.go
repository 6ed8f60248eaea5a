package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/subject"
)

// One call to merge PR 42 (callA) in every format the check route takes:
// each has the same native subject as the host records it.
var (
	callAOpenAI = []byte(`{"id":"7","type":"function","function":{"name":"merge_pull_request",` +
		`"arguments":"{\"owner\":\"octo-org\",\"repo\":\"widgets\",\"pullNumber\":42,\"merge_method\":\"squash\"}"}}`)
	callANative = []byte("{\n  \"id\": \"7\",\n  \"tool\": \"merge_pull_request\",\n  \"parameters\": " +
		"{\"owner\": \"octo-org\", \"repo\": \"widgets\", \"pullNumber\": 42, \"merge_method\": \"squash\"}\n}\n")
)

// mintAs mints with the approver token, the body in format f ("" detects
// it), and returns the approval.
func (ts *testServer) mintAs(t *testing.T, pipeline, sess string, f subject.Format, body []byte) approval {
	t.Helper()
	q := url.Values{"pipeline": {pipeline}, "session": {sess}}
	if f != "" {
		q.Set("format", string(f))
	}
	a := ts.do(t, "POST", approvalsRoute+"?"+q.Encode(), body, "Authorization", "Bearer "+approver)
	require.Equal(t, 201, a.status, string(a.body))
	var ap approval
	require.NoError(t, json.Unmarshal(a.body, &ap))
	return ap
}

// TestServeApprovalBindsHostSubject: an approval binds the native subject
// as the host records it, so a call approved in one format is confirmed in
// any other, once; another call is not.
func TestServeApprovalBindsHostSubject(t *testing.T) {
	ts, _, dir := startApprovalServe(t, nil)
	logPath := filepath.Join(dir, "events.jsonl")
	native := ts.nativeSubject(t, "exec", callA, subject.FormatMCP)
	require.Equal(t, native, ts.nativeSubject(t, "exec", callAOpenAI, subject.FormatOpenAI), "the fixtures are one call")
	require.Equal(t, native, ts.nativeSubject(t, "exec", callANative, subject.FormatNative), "the fixtures are one call")

	type use struct {
		format subject.Format
		body   []byte
		reason string // "" for accepted
	}
	callBNative := []byte(strings.Replace(string(callANative), `"pullNumber": 42`, `"pullNumber": 43`, 1))
	for i, c := range []struct {
		name       string
		mintFormat subject.Format
		mintBody   []byte
		uses       []use
	}{
		{"minted as OpenAI, used as MCP then native", subject.FormatOpenAI, callAOpenAI, []use{
			{subject.FormatAuto, callBNative, refuseSubject},
			{subject.FormatMCP, callA, ""},
			{subject.FormatNative, callANative, refuseUsed},
		}},
		{"minted as OpenAI (detected), used as native", subject.FormatAuto, callAOpenAI, []use{
			{subject.FormatNative, callANative, ""},
			{subject.FormatAuto, callA, refuseUsed},
		}},
		{"minted as spaced native, used as OpenAI", subject.FormatNative, callANative, []use{
			{subject.FormatMCP, callB, refuseSubject},
			{subject.FormatOpenAI, callAOpenAI, ""},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ap := ts.mintAs(t, "exec", "dev", c.mintFormat, c.mintBody)
			assert.Equal(t, sha256Hex(native), ap.SubjectSHA256, "the digest of the host's native subject")
			assert.Equal(t, "mcp.github:merge_pull_request", ap.Tool)
			for j, u := range c.uses {
				reqID := fmt.Sprintf("bind-%d-%d", i, j)
				path := "/v1/pipelines/exec/check?session=dev"
				if u.format != "" {
					path += "&format=" + string(u.format)
				}
				a := ts.do(t, "POST", path, u.body, "Authorization", "Bearer "+agentDev, headerRequestID, reqID, headerConfirmation, ap.ID)
				require.Equal(t, 200, a.status, string(a.body))
				d := a.decision(t)
				recs := records(t, logPath)
				if u.reason == "" {
					assert.Equal(t, abi.Accepted, d.Verdict, "use %d: %s", j, a.body)
					used := recordFor(t, recs, kindApprovalUsed, reqID)
					assert.Equal(t, d.RunID, used.RunID, "the use is recorded under the run's own id")
					assert.Equal(t, "bot", dataOf(t, used).Agent, "the agent is the request's credential")
					continue
				}
				assert.Equal(t, abi.Rejected, d.Verdict, "use %d", j)
				refused := recordFor(t, recs, kindApprovalRefused, reqID)
				assert.Equal(t, u.reason, refused.Reason, "use %d", j)
				assert.Equal(t, d.RunID, refused.RunID)
			}
		})
	}
}

// TestServeConfirmationNotRecorded: when the use of an approval cannot be
// recorded, no run happens: 500 event_log_failed and no decision.
func TestServeConfirmationNotRecorded(t *testing.T) {
	ts, _, dir := startApprovalServe(t, nil)
	ap := ts.approve(t, "exec", "dev", callA)
	before := len(records(t, filepath.Join(dir, "events.jsonl")))
	require.NoError(t, ts.s.evlog.Close())

	for _, confirmation := range []string{ap.ID, "made-up"} {
		a := ts.checkCall(t, agentDev, "exec", "dev", confirmation, callA, "not-recorded")
		require.Equal(t, 500, a.status, string(a.body))
		e := a.apiErr(t)
		assert.Equal(t, errEventLogFailed, e.Error.Code)
		assert.Equal(t, "the confirmation's use could not be recorded; the call was not checked", e.Error.Message)
		assert.Nil(t, e.Decision, "no run happened")
	}
	assert.Len(t, records(t, filepath.Join(dir, "events.jsonl")), before, "nothing was recorded")
}

// TestServeRefusedInputFields: what the host refuses before a run is
// answered 400 with the field that is wrong, on both routes that read a
// subject.
func TestServeRefusedInputFields(t *testing.T) {
	ts, _, _ := startApprovalServe(t, nil)
	for _, c := range []struct {
		name, path string
		token      string
		hdr        []string
		body       []byte
		code       string
		field      string
	}{
		{"check: unknown format", "/v1/pipelines/exec/check?session=dev&format=yaml", agentDev, nil, callA, errInvalidRequest, "format"},
		{"check: a confirmation for a proposal pipeline", "/v1/pipelines/admission/check",
			agentDev, []string{headerConfirmation, "ap-x"}, []byte(`{"actions":[]}`), errInvalidSubject, headerConfirmation},
		{"check: native parameters not an object", "/v1/pipelines/exec/check?session=dev&format=native", agentDev, nil,
			[]byte(`{"tool":"merge_pull_request","parameters":[]}`), errInvalidSubject, "/parameters"},
		{"check: MCP name not a string", "/v1/pipelines/exec/check?session=dev&format=mcp", agentDev, nil,
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`), errInvalidSubject, "/params/name"},
		{"mint: unknown format", approvalsRoute + "?pipeline=exec&session=dev&format=yaml", approver, nil, callA, errInvalidRequest, "format"},
		{"mint: forced format that does not fit", approvalsRoute + "?pipeline=exec&session=dev&format=anthropic", approver, nil, callA, errInvalidSubject, ""},
		{"mint: tool not a string", approvalsRoute + "?pipeline=exec&session=dev&format=native", approver, nil,
			[]byte(`{"tool":7}`), errInvalidSubject, "/tool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := append([]string{"Authorization", "Bearer " + c.token}, c.hdr...)
			a := ts.do(t, "POST", c.path, c.body, hdr...)
			require.Equal(t, 400, a.status, string(a.body))
			e := a.apiErr(t)
			assert.Equal(t, c.code, e.Error.Code, e.Error.Message)
			assert.Equal(t, c.field, e.Error.Field, e.Error.Message)
			assert.NotEmpty(t, e.Error.Message)
		})
	}
}
