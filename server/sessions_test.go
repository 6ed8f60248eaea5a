package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
)

// sessionServer is a Server behind httptest, with no pipeline: the session
// API needs only the catalog, the session store and the event log.
type sessionServer struct {
	s      *Server
	url    string
	events string // the event log's path
}

// sessionTokens are the credentials of a session API test server.
// rule, if set, is the config's approvals section.
type sessionTokens struct{ agents, approvers, rule string }

// notNamed is an approver token, mallory's, that approvals.approvers may
// leave out.
const notNamed = "approver-mallory-0123456789abcdef"

var bothTokens = sessionTokens{agents: agentDev + " sessions=dev\n", approvers: approver + " name=alice\n"}

// startSessionServe starts a server over the exec fixture catalog whose
// sessions are in sessions (a file other servers may share) and whose
// event log is in dir.
func startSessionServe(t *testing.T, dir, sessions string, toks sessionTokens) *sessionServer {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	events := filepath.Join(dir, "events.jsonl")
	cfg := fmt.Sprintf("catalog:\n  sources:\n    - {format: native, path: %s}\nevent_log:\n  path: %s\nsessions:\n  path: %s\ncache_dir: %s\n",
		filepath.Join(repoRoot, "testdata/exec/catalog.json"), events, sessions, filepath.Join(dir, "cache"))
	if toks.rule != "" {
		cfg += "approvals:\n" + toks.rule
	}
	path := filepath.Join(dir, "gatehost.yaml")
	writeAtomic(t, path, cfg)
	t.Setenv(TokenEnv, "")
	t.Setenv(ApproverTokenEnv, "")
	o := Options{ConfigPath: path}
	for file, content := range map[*string]string{&o.TokenFile: toks.agents, &o.ApproverTokenFile: toks.approvers} {
		if content != "" {
			*file = filepath.Join(dir, fmt.Sprintf("tokens-%d", len(content)))
			require.NoError(t, os.WriteFile(*file, []byte(content), 0o600))
		}
	}
	s, err := New(o, nil)
	require.NoError(t, err)
	require.NoError(t, s.Start(context.Background()))
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		assert.NoError(t, s.Close())
	})
	return &sessionServer{s: s, url: hs.URL, events: events}
}

func (ss *sessionServer) do(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, ss.url+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, b}
}

func (a answer) view(t *testing.T) SessionView {
	t.Helper()
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	var v SessionView
	require.NoError(t, json.Unmarshal(a.body, &v), string(a.body))
	return v
}

func toolIDs(v SessionView, basis string) []string {
	ids := []string{}
	for _, tl := range v.Tools {
		if tl.Basis == basis {
			ids = append(ids, tl.Tool)
		}
	}
	return ids
}

// sessionRecords returns the session_* records of the event log at path.
func sessionRecords(t *testing.T, path string) []eventlog.Record {
	t.Helper()
	var out []eventlog.Record
	for _, r := range records(t, path) {
		if strings.HasPrefix(r.Kind, "session_") {
			out = append(out, r)
		}
	}
	return out
}

func tools(names ...string) string {
	b, _ := json.Marshal(map[string][]string{"tools": names})
	return string(b)
}

// TestSessionRoutesAuth: the session API is the approver channel's — an
// agent's token never reaches it, and without approver tokens it is off.
func TestSessionRoutesAuth(t *testing.T) {
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/sessions/dev", ""},
		{"POST", "/v1/sessions/dev/activate", tools("files_read")},
		{"POST", "/v1/sessions/dev/revoke", tools("files_read")},
	}
	for _, tc := range []struct {
		name   string
		toks   sessionTokens
		token  string
		status int
		code   string
	}{
		{"no approver tokens, agent auth on", sessionTokens{agents: bothTokens.agents}, agentDev, 403, errApprovalsOff},
		{"no tokens at all", sessionTokens{}, "", 403, errApprovalsOff},
		{"agent token", bothTokens, agentDev, 403, errForbidden},
		{"no token", bothTokens, "", 401, errUnauthorized},
		{"unknown token", bothTokens, "not-a-token-0123456789abcdef", 401, errUnauthorized},
		{"approvers only, no token", sessionTokens{approvers: bothTokens.approvers}, "", 401, errUnauthorized},
		{"an approver token approvals.approvers does not name",
			sessionTokens{agents: bothTokens.agents, approvers: bothTokens.approvers + notNamed + " name=mallory\n",
				rule: "  approvers: [{method: token, subject: alice}]\n"}, notNamed, 403, errNotApprover},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ss := startSessionServe(t, dir, filepath.Join(dir, "sessions.json"), tc.toks)
			for _, rt := range routes {
				a := ss.do(t, rt.method, rt.path, tc.token, rt.body)
				assert.Equal(t, tc.status, a.status, "%s %s: %s", rt.method, rt.path, a.body)
				assert.Equal(t, tc.code, a.apiErr(t).Error.Code, "%s %s", rt.method, rt.path)
			}
			_, err := os.Stat(filepath.Join(dir, "sessions.json"))
			assert.ErrorIs(t, err, os.ErrNotExist, "a refused request touches no session")
			assert.Empty(t, sessionRecords(t, ss.events))
		})
	}
	t.Run("approver token", func(t *testing.T) {
		named := bothTokens
		named.approvers += notNamed + " name=mallory\n"
		named.rule = "  approvers: [{method: token, subject: alice}]\n"
		for _, toks := range []sessionTokens{bothTokens, {approvers: bothTokens.approvers}, named} {
			dir := t.TempDir()
			ss := startSessionServe(t, dir, filepath.Join(dir, "sessions.json"), toks)
			v := ss.do(t, "POST", "/v1/sessions/dev/activate", approver, tools("files_read")).view(t)
			assert.Equal(t, []string{"mcp.files:read"}, toolIDs(v, "exact"))
			recs := sessionRecords(t, ss.events)
			require.Len(t, recs, 1)
			assert.JSONEq(t, `{"session":"dev","tools":["mcp.files:read"],"version":1,"operator":"alice"}`, string(recs[0].Data))
		}
	})
}

// TestSessionRoutesErrors: each refusal answers the session error's code,
// changes nothing and records nothing.
func TestSessionRoutesErrors(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions.json")
	cat, err := catalog.Load(filepath.Join(repoRoot, "testdata/exec/catalog.json"), catalog.ImportOptions{Format: catalog.FormatNative})
	require.NoError(t, err)
	store, err := catalog.NewStore(cat...)
	require.NoError(t, err)
	_, err = session.Create(context.Background(), session.NewFileStore(sessions), store.Snapshot(), "dev", "read_file")
	require.NoError(t, err)
	ss := startSessionServe(t, dir, sessions, bothTokens)
	require.Equal(t, 200, ss.do(t, "POST", "/v1/sessions/dev/activate", approver, tools("echo")).status)

	long := strings.Repeat("x", maxToolNameBytes+1)
	many := make([]string, maxSessionTools+1)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, field              string
	}{
		{"invalid session id", "POST", "/v1/sessions/bad%20id/activate", tools("files_read"), 400, "invalid_session", "id"},
		{"invalid session id on get", "GET", "/v1/sessions/" + strings.Repeat("a", session.MaxIDBytes+1), "", 400, "invalid_session", "id"},
		{"unknown tool", "POST", "/v1/sessions/dev/activate", tools("files_read", "Files_Read"), 400, "unknown_tool", "/tools"},
		{"untrusted source", "POST", "/v1/sessions/dev/activate", tools("stray"), 400, "untrusted_source", "/tools"},
		{"duplicate tool", "POST", "/v1/sessions/dev/activate", tools("files_read", "mcp.files:read"), 400, "duplicate_tool", "/tools"},
		{"already active", "POST", "/v1/sessions/dev/activate", tools("files_read", "echo"), 409, "already_active", "/tools"},
		{"already core", "POST", "/v1/sessions/dev/activate", tools("read_file"), 409, "already_active", "/tools"},
		{"not activated", "POST", "/v1/sessions/dev/revoke", tools("echo", "files_read"), 409, "not_activated", "/tools"},
		{"core tool", "POST", "/v1/sessions/dev/revoke", tools("read_file"), 409, "core_tool", "/tools"},
		{"unknown session on revoke", "POST", "/v1/sessions/nobody/revoke", tools("echo"), 404, "unknown_session", "id"},
		{"unknown session on get", "GET", "/v1/sessions/nobody", "", 404, "unknown_session", "id"},
		{"unknown field", "POST", "/v1/sessions/dev/activate", `{"tools":["files_read"],"core":true}`, 400, errInvalidRequest, ""},
		{"data after the object", "POST", "/v1/sessions/dev/activate", `{"tools":["files_read"]} {}`, 400, errInvalidRequest, ""},
		{"not an object", "POST", "/v1/sessions/dev/activate", `["files_read"]`, 400, errInvalidRequest, ""},
		{"no tools", "POST", "/v1/sessions/dev/activate", `{"tools":[]}`, 400, errInvalidRequest, "/tools"},
		{"null", "POST", "/v1/sessions/dev/revoke", `null`, 400, errInvalidRequest, "/tools"},
		{"too many tools", "POST", "/v1/sessions/dev/activate", tools(many...), 400, errInvalidRequest, "/tools"},
		{"empty name", "POST", "/v1/sessions/dev/revoke", tools("echo", ""), 400, errInvalidRequest, "/tools/1"},
		{"long name", "POST", "/v1/sessions/dev/activate", tools(long), 400, errInvalidRequest, "/tools/0"},
		{"body over the cap", "POST", "/v1/sessions/dev/activate", `{"tools":["` + strings.Repeat("x", maxSessionBody) + `"]}`, 413, errSubjectTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ss.do(t, tc.method, tc.path, approver, tc.body)
			require.Equal(t, tc.status, a.status, string(a.body))
			e := a.apiErr(t)
			assert.Equal(t, tc.code, e.Error.Code)
			assert.Equal(t, tc.field, e.Error.Field)
			assert.NotEmpty(t, e.RequestID)
		})
	}
	v := ss.do(t, "GET", "/v1/sessions/dev", approver, "").view(t)
	assert.Equal(t, uint64(1), v.Version, "no refusal changed the session")
	assert.Equal(t, []string{"builtin:read_file"}, toolIDs(v, "core"))
	assert.Equal(t, []string{"ext.srv:echo_tool"}, toolIDs(v, "exact"))
	assert.Len(t, sessionRecords(t, ss.events), 1, "refusals record nothing")
	assert.Equal(t, 405, ss.do(t, "PUT", "/v1/sessions/dev", approver, "").status)

	// A store that cannot be read is 503 store_failure: nothing is known
	// to have changed, and the answer says retry.
	require.NoError(t, os.WriteFile(sessions, []byte(`{"format":1,`), 0o644))
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/dev", ""},
		{"POST", "/v1/sessions/dev/activate", tools("files_read")},
		{"POST", "/v1/sessions/dev/revoke", tools("echo")},
	} {
		a := ss.do(t, rt.method, rt.path, approver, rt.body)
		require.Equal(t, 503, a.status, "%s %s: %s", rt.method, rt.path, a.body)
		e := a.apiErr(t)
		assert.Equal(t, "store_failure", e.Error.Code)
		assert.NotContains(t, e.Error.Message, dir, "the cause is logged, not answered")
		assert.NotEmpty(t, a.header.Get("Retry-After"))
	}
	assert.Len(t, sessionRecords(t, ss.events), 1)
}

// TestSessionRevokeSeenBySecondServer: two servers sharing one session
// store; a revocation through one is what the other answers next, and
// each change is in the event log of the server that made it.
func TestSessionRevokeSeenBySecondServer(t *testing.T) {
	root := t.TempDir()
	sessions := filepath.Join(root, "sessions.json")
	a := startSessionServe(t, filepath.Join(root, "a"), sessions, bothTokens)
	b := startSessionServe(t, filepath.Join(root, "b"), sessions, bothTokens)

	v := a.do(t, "POST", "/v1/sessions/dev/activate", approver, tools("files_read", "echo", "files_write")).view(t)
	assert.Equal(t, uint64(1), v.Version)
	assert.Equal(t, []string{"ext.srv:echo_tool", "mcp.files:read", "mcp.files:write"}, toolIDs(v, "exact"))
	for _, tl := range v.Tools {
		assert.Equal(t, "ok", tl.Status, tl.Tool)
		require.NotNil(t, tl.CatalogGeneration)
	}
	assert.Equal(t, v, b.do(t, "GET", "/v1/sessions/dev", approver, "").view(t), "B reads what A granted")

	v = a.do(t, "POST", "/v1/sessions/dev/revoke", approver, tools("files_read", "ext.srv:echo_tool")).view(t)
	assert.Equal(t, uint64(3), v.Version, "one version per tool revoked, in one update")
	assert.Equal(t, []string{"mcp.files:write"}, toolIDs(v, "exact"))
	assert.Equal(t, v, b.do(t, "GET", "/v1/sessions/dev", approver, "").view(t), "B's next answer has A's revocation")

	v = b.do(t, "POST", "/v1/sessions/dev/revoke", approver, tools("files_write")).view(t)
	assert.Empty(t, toolIDs(v, "exact"))

	recsA := sessionRecords(t, a.events)
	require.Len(t, recsA, 2)
	assert.Equal(t, kindSessionActivated, recsA[0].Kind)
	assert.JSONEq(t, `{"session":"dev","tools":["mcp.files:read","ext.srv:echo_tool","mcp.files:write"],"version":1,"operator":"alice"}`, string(recsA[0].Data))
	assert.Equal(t, kindSessionRevoked, recsA[1].Kind)
	assert.JSONEq(t, `{"session":"dev","tools":["mcp.files:read","ext.srv:echo_tool"],"version":3,"operator":"alice"}`, string(recsA[1].Data))
	assert.NotEmpty(t, recsA[1].RequestID)
	recsB := sessionRecords(t, b.events)
	require.Len(t, recsB, 1)
	assert.JSONEq(t, `{"session":"dev","tools":["mcp.files:write"],"version":4,"operator":"alice"}`, string(recsB[0].Data))
}

// TestSessionChangeNotRecorded: a change the event log cannot record is a
// 500 that says the change was made — it is in the store.
func TestSessionChangeNotRecorded(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions.json")
	ss := startSessionServe(t, dir, sessions, bothTokens)
	require.NoError(t, ss.s.evlog.(*eventlog.Log).Close())
	a := ss.do(t, "POST", "/v1/sessions/dev/activate", approver, tools("files_read"))
	require.Equal(t, 500, a.status, string(a.body))
	e := a.apiErr(t)
	assert.Equal(t, errEventLogFailed, e.Error.Code)
	assert.Contains(t, e.Error.Message, "the change was made")
	set, err := session.NewFileStore(sessions).Load(context.Background(), "dev")
	require.NoError(t, err)
	assert.Contains(t, set.Activated, "mcp.files:read")
	assert.True(t, bytes.Contains(a.body, []byte(`"request_id"`)))
}

// FuzzDecodeTools: no body makes the decoder panic, and one it accepts
// names 1 to maxSessionTools tools of 1 to maxToolNameBytes bytes; one it
// refuses is answered 400.
func FuzzDecodeTools(f *testing.F) {
	for _, seed := range []string{tools("files_read"), `{"tools":[]}`, `{"tools":["a"],"x":1}`, `{"tools":["a"]}{}`, `null`, `{"tools":[1]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/sessions/s/activate", nil)
		names, ok := decodeTools(rec, req, body)
		if !ok {
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("refused with %d", rec.Code)
			}
			return
		}
		if len(names) == 0 || len(names) > maxSessionTools {
			t.Fatalf("accepted %d tools", len(names))
		}
		for _, n := range names {
			if n == "" || len(n) > maxToolNameBytes {
				t.Fatalf("accepted name %q", n)
			}
		}
	})
}
