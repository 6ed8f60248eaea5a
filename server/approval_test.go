package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/testing/edgecase"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

const (
	agentDev   = "agent-dev-0123456789abcdef0123"  // sessions dev, dev2
	agentOther = "agent-other-0123456789abcdef012" // session other
	approver   = "approver-0123456789abcdef012345" // name alice
	agentDev2  = "agent-dev2-0123456789abcdef012"  // session dev, name bot2
	// aliceName is how the log and the answers name alice.
	aliceName = "token:gatehost-approvers/alice"
)

// fakeClock is the approvals' clock: expiry is tested by moving it, not by
// waiting.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// writeApprovalConfig writes, in dir, a config with two exec pipelines
// (exec, exec-b) and a proposal pipeline (admission) over the MCP catalog
// at catalogPath.
func writeApprovalConfig(t *testing.T, dir, catalogPath string) string {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	stage := "{plugin: exec, timeout: 60s, capabilities: [catalog, session], config: {confirm_effects: [non_idempotent]}}"
	cfg := fmt.Sprintf(`catalog:
  sources:
    - {format: mcp, path: %s, server: github}
event_log:
  path: %s
sessions:
  path: %s
cache_dir: %s
queue_timeout: 10m
plugins:
  exec: {path: %s}
  static-verify: {path: %s}
pipelines:
  exec:
    subject: tool_call
    stages: [%s]
  exec-b:
    subject: tool_call
    stages: [%s]
  admission:
    subject: proposal
    stages: [{plugin: static-verify, timeout: 60s, capabilities: [catalog, schema]}]
`, catalogPath, filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "sessions.json"), testwasm.CacheDir(),
		execWasm, svWasm, stage, stage)
	path := filepath.Join(dir, "gatehost.yaml")
	writeAtomic(t, path, cfg)
	return path
}

// startApprovalServe starts a server whose agent tokens are agentDev
// (sessions dev, dev2) and agentOther (other), whose approver is alice, and
// whose sessions dev, dev2 and other have merge_pull_request granted.
func startApprovalServe(t *testing.T, mod func(*Options)) (*testServer, *fakeClock, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := writeApprovalConfig(t, dir, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"))
	for _, sess := range []string{"dev", "dev2", "other"} {
		edgecase.Activate(t, cfg, sess, "merge_pull_request")
	}
	tokFile := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokFile, []byte("# agents\n"+agentDev+" sessions=dev,dev2 name=bot\n"+agentOther+"\tsessions=other\n"+agentDev2+" sessions=dev name=bot2\n"), 0o600))
	apprFile := filepath.Join(dir, "approvers")
	require.NoError(t, os.WriteFile(apprFile, []byte(approver+" name=alice\n"), 0o600))
	t.Setenv(TokenEnv, "")
	t.Setenv(ApproverTokenEnv, "")
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	ts := startServe(t, cfg, func(o *Options) {
		o.TokenFile, o.ApproverTokenFile, o.Now = tokFile, apprFile, clock.Now
		if mod != nil {
			mod(o)
		}
	})
	return ts, clock, dir
}

// Subjects: A is an MCP tools/call merging PR 42; B merges PR 43.
var (
	callA = mustRead("testdata/exec/calls/mcp-request.json")
	callB = []byte(strings.Replace(string(callA), `"pullNumber": 42`, `"pullNumber": 43`, 1))
)

func mustRead(rel string) []byte {
	b, err := os.ReadFile(filepath.Join("..", rel))
	if err != nil {
		panic(err)
	}
	return b
}

func (ts *testServer) mint(t *testing.T, token, pipeline, sess string, body []byte) answer {
	t.Helper()
	q := url.Values{}
	if pipeline != "" {
		q.Set("pipeline", pipeline)
	}
	if sess != "" {
		q.Set("session", sess)
	}
	var hdr []string
	if token != "" {
		hdr = []string{"Authorization", "Bearer " + token}
	}
	return ts.do(t, "POST", approvalsRoute+"?"+q.Encode(), body, hdr...)
}

// ask makes the agent's check of body (format f, "" detects it) without a
// confirmation, which opens the approval request an approver decides, and
// returns the request's id.
func (ts *testServer) ask(t *testing.T, token, pipeline, sess string, f subject.Format, body []byte) string {
	t.Helper()
	q := url.Values{}
	if sess != "" {
		q.Set("session", sess)
	}
	if f != "" {
		q.Set("format", string(f))
	}
	a := ts.do(t, "POST", "/v1/pipelines/"+pipeline+"/check?"+q.Encode(), body, "Authorization", "Bearer "+token)
	require.Equal(t, 200, a.status, string(a.body))
	var ans decisionWithApproval
	require.NoError(t, json.Unmarshal(a.body, &ans))
	require.NotNil(t, ans.Approval, "the check opens a request: %s", a.body)
	require.Equal(t, approval.StatePending, ans.Approval.State, string(a.body))
	return ans.Approval.RequestID
}

// agentOf is the agent token that may act for sess.
func agentOf(sess string) string {
	if sess == "other" {
		return agentOther
	}
	return agentDev
}

// approve has the session's agent ask for body, has alice approve it and
// returns the approval.
func (ts *testServer) approve(t *testing.T, pipeline, sess string, body []byte) approval.Approval {
	t.Helper()
	ts.ask(t, agentOf(sess), pipeline, sess, "", body)
	a := ts.mint(t, approver, pipeline, sess, body)
	require.Equal(t, 201, a.status, string(a.body))
	var ap approval.Approval
	require.NoError(t, json.Unmarshal(a.body, &ap))
	require.True(t, approval.ValidID(ap.ID), ap.ID)
	return ap
}

func (ts *testServer) checkCall(t *testing.T, token, pipeline, sess, confirmation string, body []byte, reqID string) answer {
	t.Helper()
	path := "/v1/pipelines/" + pipeline + "/check"
	if sess != "" {
		path += "?session=" + url.QueryEscape(sess)
	}
	hdr := []string{"Authorization", "Bearer " + token, headerRequestID, reqID}
	if confirmation != "" {
		hdr = append(hdr, headerConfirmation, confirmation)
	}
	return ts.do(t, "POST", path, body, hdr...)
}

func hasFinding(d host.Decision, code string) bool {
	for _, f := range d.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// records returns the event log's records, in order.
func records(t *testing.T, path string) []eventlog.Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []eventlog.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, eventlog.MaxRecordBytes+1)
	for sc.Scan() {
		var r eventlog.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

// recordFor returns the one record of kind with request id reqID.
func recordFor(t *testing.T, recs []eventlog.Record, kind, reqID string) eventlog.Record {
	t.Helper()
	var found []eventlog.Record
	for _, r := range recs {
		if r.Kind == kind && r.RequestID == reqID {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "%s records of request %s", kind, reqID)
	return found[0]
}

type approvalData struct {
	ApprovalID    string    `json:"approval_id"`
	Session       string    `json:"session"`
	Tool          string    `json:"tool"`
	SchemaDigest  string    `json:"schema_digest"`
	SubjectSHA256 string    `json:"subject_sha256"`
	ExpiresAt     time.Time `json:"expires_at"`
	Approver      string    `json:"approver"`
	Agent         string    `json:"agent"`
}

func dataOf(t *testing.T, r eventlog.Record) approvalData {
	t.Helper()
	var d approvalData
	require.NoError(t, json.Unmarshal(r.Data, &d), string(r.Data))
	return d
}

// TestServeConfirmationNeedsApproval: over HTTP, only an approval minted
// with an approver token, for this very call, session and pipeline,
// unexpired and unused, confirms a tool call; whatever else a caller puts
// in X-Gatehost-Confirmation confirms nothing.
func TestServeConfirmationNeedsApproval(t *testing.T) {
	ts, clock, dir := startApprovalServe(t, nil)
	logPath := filepath.Join(dir, "events.jsonl")

	rejected := func(t *testing.T, a answer) host.Decision {
		t.Helper()
		require.Equal(t, 200, a.status, string(a.body))
		d := a.decision(t)
		assert.Equal(t, abi.Rejected, d.Verdict)
		assert.True(t, hasFinding(d, abi.CodeConfirmationRequired), "rejected for want of a confirmation: %s", a.body)
		return d
	}

	t.Run("a value the caller made up confirms nothing", func(t *testing.T) {
		wellFormed := "ap-" + strings.Repeat("0", 32)
		for i, v := range []string{"self-confirmed", "yes", "ok-by-alice", wellFormed, strings.ToUpper(wellFormed),
			"ap-" + strings.Repeat("g", 32), strings.Repeat("x", 4000)} {
			reqID := fmt.Sprintf("made-up-%d", i)
			rejected(t, ts.checkCall(t, agentDev, "exec", "dev", v, callA, reqID))
			r := recordFor(t, records(t, logPath), approval.KindRefused, reqID)
			assert.Equal(t, approval.CodeUnknown, r.Reason)
			got := dataOf(t, r)
			if v == wellFormed {
				assert.Equal(t, v, got.ApprovalID)
			} else {
				assert.Empty(t, got.ApprovalID, "free text is not copied into the log")
			}
		}
		// A blank header is no header: nothing to refuse.
		rejected(t, ts.checkCall(t, agentDev, "exec", "dev", "   ", callA, "blank"))
		for _, r := range records(t, logPath) {
			assert.False(t, r.RequestID == "blank" && strings.HasPrefix(r.Kind, "approval_"), "record %+v", r)
		}
	})

	t.Run("a correct approval is accepted exactly once", func(t *testing.T) {
		ap := ts.approve(t, "exec", "dev", callA)
		assert.Equal(t, "mcp.github:merge_pull_request", ap.Tool)
		assert.Equal(t, aliceName, ap.Approver)
		assert.Equal(t, clock.Now().Add(5*time.Minute), ap.ExpiresAt)

		a := ts.checkCall(t, agentDev, "exec", "dev", ap.ID, callA, "use-1")
		require.Equal(t, 200, a.status, string(a.body))
		d := a.decision(t)
		require.Equal(t, abi.Accepted, d.Verdict, string(a.body))

		replay := rejected(t, ts.checkCall(t, agentDev, "exec", "dev", ap.ID, callA, "use-2"))
		recs := records(t, logPath)
		assert.Equal(t, approval.CodeUsed, recordFor(t, recs, approval.KindRefused, "use-2").Reason)

		// The log ties the person's approval to the run it confirmed.
		used := recordFor(t, recs, approval.KindUsed, "use-1")
		assert.Equal(t, d.RunID, used.RunID)
		assert.Equal(t, "exec", used.Pipeline)
		decision := recordFor(t, recs, eventlog.KindDecision, "use-1")
		var dd struct {
			SubjectSHA256 string `json:"subject_sha256"`
		}
		require.NoError(t, json.Unmarshal(decision.Data, &dd))
		assert.Equal(t, dd.SubjectSHA256, ap.SubjectSHA256, "the approval binds the digest the decision records")
		assert.Equal(t, dd.SubjectSHA256, dataOf(t, used).SubjectSHA256)
		assert.Equal(t, "bot", dataOf(t, used).Agent)
		minted := dataOf(t, recordOfApproval(t, recs, approval.KindMinted, ap.ID))
		assert.Equal(t, aliceName, minted.Approver)
		assert.Equal(t, ap.SchemaDigest, minted.SchemaDigest)
		assert.Equal(t, "dev", minted.Session)
		assert.NotEqual(t, d.RunID, replay.RunID)
		_, err := eventlog.Verify(logPath)
		require.NoError(t, err, "the approval records are part of the hash chain")
	})

	t.Run("concurrent uses: one acceptance", func(t *testing.T) {
		ap := ts.approve(t, "exec", "dev", callA)
		const n = 8
		verdicts := make([]abi.Verdict, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				a := ts.checkCall(t, agentDev, "exec", "dev", ap.ID, callA, fmt.Sprintf("race-%d", i))
				if assert.Equal(t, 200, a.status, string(a.body)) {
					verdicts[i] = a.decision(t).Verdict
				}
			})
		}
		wg.Wait()
		accepted := 0
		for _, v := range verdicts {
			if v == abi.Accepted {
				accepted++
			}
		}
		assert.Equal(t, 1, accepted, "verdicts %v", verdicts)
	})

	t.Run("bound to the subject, session and pipeline", func(t *testing.T) {
		// The call as the host sees it is what is bound, not the bytes: the
		// native form of A is A.
		nativeA := ts.nativeSubject(t, "exec", callA, subject.FormatAuto)
		cases := []struct {
			name               string
			mintSess, mintPipe string
			useSess, usePipe   string
			useBody            []byte
			reason             string
		}{
			{name: "subject A used for subject B", mintSess: "dev", mintPipe: "exec", useSess: "dev", usePipe: "exec",
				useBody: callB, reason: approval.CodeSubjectMismatch},
			{name: "another session of the same token", mintSess: "dev2", mintPipe: "exec", useSess: "dev", usePipe: "exec",
				useBody: callA, reason: approval.CodeSessionMismatch},
			{name: "no session", mintSess: "dev", mintPipe: "exec", useSess: "", usePipe: "exec",
				useBody: callA, reason: approval.CodeSessionMismatch},
			{name: "another pipeline", mintSess: "dev", mintPipe: "exec-b", useSess: "dev", usePipe: "exec",
				useBody: callA, reason: approval.CodePipelineMismatch},
			{name: "another agent's session", mintSess: "other", mintPipe: "exec", useSess: "dev", usePipe: "exec",
				useBody: callA, reason: approval.CodeSessionMismatch},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ap := ts.approve(t, c.mintPipe, c.mintSess, callA)
				reqID := fmt.Sprintf("bound-%d", i)
				a := ts.checkCall(t, agentDev, c.usePipe, c.useSess, ap.ID, c.useBody, reqID)
				if c.useSess != "" {
					rejected(t, a)
				} else { // without a session the gate stops before the confirmation policy
					require.Equal(t, 200, a.status, string(a.body))
					assert.Equal(t, abi.Rejected, a.decision(t).Verdict)
				}
				assert.Equal(t, c.reason, recordFor(t, records(t, logPath), approval.KindRefused, reqID).Reason)
				if c.mintSess == "other" {
					return // agentDev may not act there; agentOther's use is below
				}
				// A mismatch spends the approval (fail closed: a presented
				// but wrong approval is burned): the call it was minted
				// for, even in another format, is no longer confirmed.
				a = ts.checkCall(t, agentDev, c.mintPipe, c.mintSess, ap.ID, nativeA, reqID+"-after")
				require.Equal(t, 200, a.status, string(a.body))
				assert.Equal(t, abi.Rejected, a.decision(t).Verdict, string(a.body))
				assert.Equal(t, approval.CodeUsed, recordFor(t, records(t, logPath), approval.KindRefused, reqID+"-after").Reason)
			})
		}
	})

	t.Run("expired", func(t *testing.T) {
		for i, past := range []time.Duration{5 * time.Minute, 5*time.Minute + time.Nanosecond, time.Hour} {
			ap := ts.approve(t, "exec", "dev", callA)
			clock.Add(past)
			reqID := fmt.Sprintf("expired-%d", i)
			rejected(t, ts.checkCall(t, agentDev, "exec", "dev", ap.ID, callA, reqID))
			assert.Equal(t, approval.CodeExpired, recordFor(t, records(t, logPath), approval.KindRefused, reqID).Reason)
		}
		ap := ts.approve(t, "exec", "dev", callA)
		clock.Add(5*time.Minute - time.Microsecond) // expiries are kept to the microsecond
		a := ts.checkCall(t, agentDev, "exec", "dev", ap.ID, callA, "not-yet-expired")
		assert.Equal(t, abi.Accepted, a.decision(t).Verdict, "usable until its expiry")
	})

	t.Run("the approver channel", func(t *testing.T) {
		cases := []struct {
			name   string
			token  string
			status int
			code   string
		}{
			{"an agent token may not mint", agentDev, 403, errForbidden},
			{"nor the other agent's", agentOther, 403, errForbidden},
			{"no token", "", 401, errUnauthorized},
			{"a wrong token", approver[:len(approver)-1] + "X", 401, errUnauthorized},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				a := ts.mint(t, c.token, "exec", "dev", callA)
				require.Equal(t, c.status, a.status, string(a.body))
				assert.Equal(t, c.code, a.apiErr(t).Error.Code)
			})
		}
		a := ts.checkCall(t, approver, "exec", "dev", "", callA, "approver-checks")
		require.Equal(t, 403, a.status, string(a.body))
		assert.Equal(t, errForbidden, a.apiErr(t).Error.Code)
	})

	t.Run("mint errors", func(t *testing.T) {
		cases := []struct {
			name, pipeline, session string
			body                    []byte
			status                  int
			code, field             string
		}{
			{name: "no pipeline", session: "dev", body: callA, status: 400, code: errInvalidRequest, field: "pipeline"},
			{name: "unknown pipeline", pipeline: "nope", session: "dev", body: callA, status: 404, code: errUnknownPipeline, field: "pipeline"},
			{name: "a proposal pipeline", pipeline: "admission", body: readThenWrite, status: 400, code: errInvalidRequest, field: "pipeline"},
			{name: "bad session id", pipeline: "exec", session: "a b", body: callA, status: 400, code: errInvalidRequest, field: "session"},
			{name: "not JSON", pipeline: "exec", session: "dev", body: []byte(`{"name":`), status: 400, code: errInvalidSubject},
			{name: "a tool the catalog lacks", pipeline: "exec", session: "dev",
				body: []byte(`{"name":"delete_everything","arguments":{}}`), status: 400, code: errInvalidSubject},
			{name: "undecodable arguments", pipeline: "exec", session: "dev",
				body: []byte(`{"id":"c","type":"function","function":{"name":"merge_pull_request","arguments":"{not json"}}`), status: 400, code: errInvalidSubject},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				a := ts.mint(t, approver, c.pipeline, c.session, c.body)
				require.Equal(t, c.status, a.status, string(a.body))
				e := a.apiErr(t)
				assert.Equal(t, c.code, e.Error.Code)
				assert.Equal(t, c.field, e.Error.Field)
				assert.NotEmpty(t, e.Error.Message)
			})
		}
		assert.Equal(t, 405, ts.do(t, "GET", approvalsRoute, nil, "Authorization", "Bearer "+approver).status)
	})

	t.Run("too many outstanding", func(t *testing.T) {
		// A cap of one, on a store of its own.
		prev, prevDesk := ts.s.approvals, ts.s.desk
		capped, err := approval.New(approval.Options{TTL: prev.TTL(), MaxOutstanding: 1, Now: ts.s.now})
		require.NoError(t, err)
		desk, err := approval.NewDesk(approval.DeskOptions{Approvals: capped, Rule: prevDesk.Rule()})
		require.NoError(t, err)
		ts.s.approvals, ts.s.desk = capped, desk
		defer func() { ts.s.approvals, ts.s.desk = prev, prevDesk }()
		ts.approve(t, "exec", "dev", callA)
		ts.ask(t, agentDev, "exec", "dev", "", callB)
		a := ts.mint(t, approver, "exec", "dev", callB)
		require.Equal(t, 429, a.status, string(a.body))
		assert.Equal(t, errTooManyApprovals, a.apiErr(t).Error.Code)
		clock.Add(time.Hour) // expired ones make room
		ts.approve(t, "exec", "dev", callA)
	})

	// ?session= may name only a session the bearer token is bound to.
	t.Run("session bound to the token", func(t *testing.T) {
		cases := []struct {
			name, token, session string
			status               int
			code                 string
		}{
			{name: "bound session", token: agentDev, session: "dev", status: 200},
			{name: "second bound session", token: agentDev, session: "dev2", status: 200},
			{name: "no session", token: agentDev, status: 200},
			{name: "another token's session", token: agentDev, session: "other", status: 403, code: errSessionForbidden},
			{name: "the other way round", token: agentOther, session: "dev", status: 403, code: errSessionForbidden},
			{name: "a session nobody has", token: agentOther, session: "ghost", status: 403, code: errSessionForbidden},
			{name: "case matters", token: agentDev, session: "DEV", status: 403, code: errSessionForbidden},
			{name: "not a session id", token: agentDev, session: "dev,other", status: 400, code: errInvalidRequest},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				a := ts.checkCall(t, c.token, "exec", c.session, "", callA, fmt.Sprintf("sess-%d", i))
				require.Equal(t, c.status, a.status, string(a.body))
				if c.code != "" {
					e := a.apiErr(t)
					assert.Equal(t, c.code, e.Error.Code)
					assert.Equal(t, "session", e.Error.Field)
					return
				}
				assert.NotEmpty(t, a.decision(t).Verdict)
			})
		}
	})

	t.Run("schema changed after the approval", func(t *testing.T) {
		ap := ts.approve(t, "exec", "dev", callA)
		changed := catalogWithChangedSchema(t, filepath.Join(dir, "changed-catalog"), "merge_pull_request.json")
		writeApprovalConfig(t, dir, changed)
		require.NoError(t, ts.s.reload(context.Background(), "test"))
		a := ts.checkCall(t, agentDev, "exec", "dev", ap.ID, callA, "schema-changed")
		require.Equal(t, 200, a.status, string(a.body))
		assert.Equal(t, abi.Rejected, a.decision(t).Verdict)
		assert.Equal(t, approval.CodeSchemaDigestMismatch, recordFor(t, records(t, logPath), approval.KindRefused, "schema-changed").Reason,
			"approvals outlive a reload, and still bind the schema they were minted for")
	})

	t.Run("a reload re-reads the approver tokens", func(t *testing.T) {
		const bob = "approver-bob-0123456789abcdef0123"
		// The catalog the sessions pinned again, so that the call needs
		// only a person.
		writeApprovalConfig(t, dir, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"))
		require.NoError(t, ts.s.reload(context.Background(), "test"))
		apprFile := filepath.Join(dir, "approvers")
		// A token in both channels: the reload fails, alice still approves.
		writeAtomic(t, apprFile, agentDev+" name=mallory\n")
		require.ErrorIs(t, ts.s.reload(context.Background(), "test"), identity.ErrTokenReused)
		ts.approve(t, "exec", "dev", callA)

		writeAtomic(t, apprFile, bob+" name=bob\n")
		require.NoError(t, ts.s.reload(context.Background(), "test"))
		ts.ask(t, agentDev, "exec", "dev", "", callB)
		assert.Equal(t, 401, ts.mint(t, approver, "exec", "dev", callB).status, "alice's token is gone")
		a := ts.mint(t, bob, "exec", "dev", callB)
		require.Equal(t, 201, a.status, string(a.body))
		var ap approval.Approval
		require.NoError(t, json.Unmarshal(a.body, &ap))
		assert.Equal(t, "token:gatehost-approvers/bob", ap.Approver)
	})
}

// recordOfApproval returns the one record of kind for approval id.
func recordOfApproval(t *testing.T, recs []eventlog.Record, kind, id string) eventlog.Record {
	t.Helper()
	var found []eventlog.Record
	for _, r := range recs {
		if r.Kind == kind && dataOf(t, r).ApprovalID == id {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1)
	return found[0]
}

// catalogWithChangedSchema copies the GitHub catalog to dst with one
// tool's schema changed (one more required argument).
func catalogWithChangedSchema(t *testing.T, dst, file string) string {
	t.Helper()
	src := filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server")
	require.NoError(t, os.MkdirAll(dst, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		if e.Name() == file {
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			m["inputSchema"].(map[string]any)["required"] = []string{"owner", "repo", "pullNumber", "commit_title"}
			b, err = json.Marshal(m)
			require.NoError(t, err)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// TestServeApprovalsDisabled: with no approver token nothing can be
// confirmed over HTTP: /v1/approvals refuses every caller before any
// runtime is consulted.
func TestServeApprovalsDisabled(t *testing.T) {
	s := &Server{opts: Options{RetryAfter: time.Second}, logger: slog.New(slog.DiscardHandler)}
	s.metrics = newMetrics(s)
	agents, err := identity.LoadTokens("", agentDev)
	require.NoError(t, err)
	s.tokens.Store(agents)
	s.approvers.Store(&identity.Tokens{})
	for _, tok := range []string{"", agentDev, approver} {
		req, err := http.NewRequest("POST", "http://gatehost"+approvalsRoute+"?pipeline=exec&session=dev", strings.NewReader(string(callA)))
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		require.Equal(t, 403, rec.Code, rec.Body.String())
		assert.Equal(t, errApprovalsOff, rec.Header().Get("X-Gatehost-Error"))
	}
}

// nativeSubject is body as the server's current host records it on
// pipeline: the subject an approval binds.
func (ts *testServer) nativeSubject(t *testing.T, pipeline string, body []byte, f subject.Format) []byte {
	t.Helper()
	rt := ts.s.acquire()
	require.NotNil(t, rt)
	defer rt.release()
	native, err := rt.h.NativeSubject(pipeline, body, f)
	require.NoError(t, err)
	return native
}

// One call to merge PR 42 (callA) in every format the check route takes:
// each has the same native subject as the host records it.
var (
	callAOpenAI = []byte(`{"id":"7","type":"function","function":{"name":"merge_pull_request",` +
		`"arguments":"{\"owner\":\"octo-org\",\"repo\":\"widgets\",\"pullNumber\":42,\"merge_method\":\"squash\"}"}}`)
	callAReordered = []byte(`{"parameters":{"merge_method":"squash","pullNumber":42,"repo":"widgets","owner":"octo-org"},"tool":"merge_pull_request","id":"7"}`)
	callANative    = []byte("{\n  \"id\": \"7\",\n  \"tool\": \"merge_pull_request\",\n  \"parameters\": " +
		"{\"owner\": \"octo-org\", \"repo\": \"widgets\", \"pullNumber\": 42, \"merge_method\": \"squash\"}\n}\n")
)

// mintAs mints with the approver token, the body in format f ("" detects
// it), and returns the approval.
func (ts *testServer) mintAs(t *testing.T, pipeline, sess string, f subject.Format, body []byte) approval.Approval {
	t.Helper()
	ts.ask(t, agentDev, pipeline, sess, f, body)
	q := url.Values{"pipeline": {pipeline}, "session": {sess}}
	if f != "" {
		q.Set("format", string(f))
	}
	a := ts.do(t, "POST", approvalsRoute+"?"+q.Encode(), body, "Authorization", "Bearer "+approver)
	require.Equal(t, 201, a.status, string(a.body))
	var ap approval.Approval
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
			{subject.FormatMCP, callA, ""},
			{subject.FormatNative, callANative, approval.CodeUsed},
		}},
		{"minted as OpenAI, presented for another call: burned", subject.FormatOpenAI, callAOpenAI, []use{
			{subject.FormatAuto, callBNative, approval.CodeSubjectMismatch},
			{subject.FormatMCP, callA, approval.CodeUsed},
		}},
		{"minted as OpenAI (detected), used as native", subject.FormatAuto, callAOpenAI, []use{
			{subject.FormatNative, callANative, ""},
			{subject.FormatAuto, callA, approval.CodeUsed},
		}},
		{"minted as spaced native, used as OpenAI", subject.FormatNative, callANative, []use{
			{subject.FormatOpenAI, callAOpenAI, ""},
		}},
		{"minted as spaced native, presented for another call", subject.FormatNative, callANative, []use{
			{subject.FormatMCP, callB, approval.CodeSubjectMismatch},
		}},
		// A native call is recorded as written: another member order is
		// another recorded subject, which a re-encoding would have hidden.
		{"minted as native in another member order", subject.FormatAuto, callAReordered, []use{
			{subject.FormatNative, []byte(strings.ReplaceAll(string(callAReordered), ",", ", ")), ""},
		}},
		{"minted as native in another member order, presented as MCP", subject.FormatAuto, callAReordered, []use{
			{subject.FormatMCP, callA, approval.CodeSubjectMismatch},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ap := ts.mintAs(t, "exec", "dev", c.mintFormat, c.mintBody)
			assert.Equal(t, sha256Hex(ts.nativeSubject(t, "exec", c.mintBody, c.mintFormat)), ap.SubjectSHA256, "the digest of the host's native subject")
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
					var rec struct {
						SubjectSHA256 string `json:"subject_sha256"`
					}
					require.NoError(t, json.Unmarshal(recordFor(t, recs, eventlog.KindDecision, reqID).Data, &rec))
					assert.Equal(t, ap.SubjectSHA256, rec.SubjectSHA256, "the approval binds the digest the decision records")
					used := recordFor(t, recs, approval.KindUsed, reqID)
					assert.Equal(t, d.RunID, used.RunID, "the use is recorded under the run's own id")
					assert.Equal(t, "bot", dataOf(t, used).Agent, "the agent is the request's credential")
					continue
				}
				assert.Equal(t, abi.Rejected, d.Verdict, "use %d", j)
				refused := recordFor(t, recs, approval.KindRefused, reqID)
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
	require.NoError(t, ts.s.evlog.(*eventlog.Log).Close())

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
