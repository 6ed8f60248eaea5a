package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/internal/testing/pageclient"
)

// TestServeApprovalRule: POST /v1/approvals decides under the rule the
// approval page applies (approvals.approvers), an approval is its
// caller's alone, a reload applies the approvers and approver tokens it
// reads (to the API and to sign-ins already made on the page) and refuses
// an approver no approver token matches and any other change of
// approvals:.
func TestServeApprovalRule(t *testing.T) {
	const (
		mallory = "approver-mallory-0123456789abcdef"
		alice2  = "approver-alice2-0123456789abcdef0"
		bob     = "approver-bob-0123456789abcdef0123"
	)
	ctx := context.Background()
	ts, _, dir := startApprovalServe(t, nil)
	apprFile, cfg := filepath.Join(dir, "approvers"), filepath.Join(dir, "gatehost.yaml")
	base, err := os.ReadFile(cfg)
	require.NoError(t, err)
	withApprovals := func(section string) { writeAtomic(t, cfg, string(base)+"approvals:\n"+section) }
	writeAtomic(t, apprFile, approver+" name=alice\n"+mallory+" name=mallory\n")
	withApprovals("  approvers: [{method: token, subject: alice}]\n")
	require.NoError(t, ts.s.reload(ctx, "test"))

	ts.ask(t, agentDev, "exec", "dev", "", callA)
	a := ts.mint(t, mallory, "exec", "dev", callA)
	require.Equal(t, 403, a.status, string(a.body))
	assert.Equal(t, errNotApprover, a.apiErr(t).Error.Code, "mallory holds an approver token, and is not an approver")
	a = ts.mint(t, approver, "exec", "dev", callA)
	require.Equal(t, 201, a.status, string(a.body))
	var ap approval.Approval
	require.NoError(t, json.Unmarshal(a.body, &ap))
	assert.Equal(t, approval.CallerOf(&abi.Principal{Method: abi.MethodToken, Issuer: "gatehost-tokens", Subject: "bot"}), ap.CallerKey)

	// bot2 shares session dev: its identical call is its own request,
	// still pending; bot's runs, once.
	ts.ask(t, agentDev2, "exec", "dev", "", callA)
	run := ts.checkCall(t, agentDev, "exec", "dev", "", callA, "bot-runs")
	require.Equal(t, 200, run.status, string(run.body))
	assert.Equal(t, abi.Accepted, run.decision(t).Verdict)
	// Presented by bot2, bot's next approval confirms nothing, and is spent.
	ts.ask(t, agentDev, "exec", "dev", "", callB)
	mine := ts.approveAs(t, approver, "exec", "dev", callB)
	stolen := ts.checkCall(t, agentDev2, "exec", "dev", mine.ID, callB, "bot2-presents")
	require.Equal(t, 200, stolen.status, string(stolen.body))
	assert.Equal(t, abi.Rejected, stolen.decision(t).Verdict)
	assert.Equal(t, approval.CodeCallerMismatch, recordFor(t, records(t, filepath.Join(dir, "events.jsonl")), approval.KindRefused, "bot2-presents").Reason)

	// Two callers wait for one call: the approver names the request.
	ts.ask(t, agentDev2, "exec", "dev", "", callB)
	id := ts.ask(t, agentDev, "exec", "dev", "", callB)
	a = ts.mint(t, approver, "exec", "dev", callB)
	require.Equal(t, 409, a.status, string(a.body))
	assert.Equal(t, errAmbiguousRequest, a.apiErr(t).Error.Code)
	a = ts.do(t, "POST", approvalsRoute+"?pipeline=exec&session=dev&request="+id, callB, "Authorization", "Bearer "+approver)
	require.Equal(t, 201, a.status, string(a.body))

	// A sign-in on the page ends when its token is replaced.
	page, err := pageclient.SignIn(nil, ts.url+compose.ApprovalPagePrefix, approver)
	require.NoError(t, err)
	status, _, err := page.Get("/")
	require.NoError(t, err)
	require.Equal(t, 200, status)
	writeAtomic(t, apprFile, alice2+" name=alice\n"+bob+" name=bob\n")
	require.NoError(t, ts.s.reload(ctx, "test"))
	status, _, err = page.Get("/")
	require.NoError(t, err)
	assert.Equal(t, 403, status, "alice's old token no longer signs her in")

	// A reload applies approvals.approvers: bob approves, alice no longer.
	withApprovals("  approvers: [{method: token, subject: bob}]\n")
	require.NoError(t, ts.s.reload(ctx, "test"))
	ts.ask(t, agentDev, "exec", "dev2", "", callA)
	a = ts.mint(t, alice2, "exec", "dev2", callA)
	require.Equal(t, 403, a.status, string(a.body))
	assert.Equal(t, errNotApprover, a.apiErr(t).Error.Code)
	a = ts.mint(t, bob, "exec", "dev2", callA)
	require.Equal(t, 201, a.status, string(a.body))

	// A reload naming an approver no approver token is refused, naming
	// the entry and the nearest token; the running rule still decides.
	withApprovals("  approvers: [{method: token, subject: bbo}]\n")
	err = ts.s.reload(ctx, "test")
	var ae *approval.ApproverError
	require.ErrorAs(t, err, &ae)
	require.ErrorIs(t, err, approval.ErrApproverMatchesNobody)
	assert.Contains(t, err.Error(), `approvals.approvers[0].subject: "bbo": none of the approver tokens is named so; did you mean "bob"?`)
	ts.ask(t, agentDev, "exec", "dev2", "", callB)
	a = ts.mint(t, bob, "exec", "dev2", callB)
	require.Equal(t, 201, a.status, string(a.body))

	// Any other change of approvals: is refused; the old one serves.
	withApprovals("  approvers: [{method: token, subject: bob}]\n  ttl: 1m\n")
	require.ErrorIs(t, ts.s.reload(ctx, "test"), compose.ErrApprovalsChanged)
}

// approveAs approves body, whose request is open, with approver token tok.
func (ts *testServer) approveAs(t *testing.T, tok, pipeline, sess string, body []byte) approval.Approval {
	t.Helper()
	a := ts.mint(t, tok, pipeline, sess, body)
	require.Equal(t, 201, a.status, string(a.body))
	var ap approval.Approval
	require.NoError(t, json.Unmarshal(a.body, &ap))
	return ap
}

// TestServeRefusesApproverMatchingNobody: gatehost serve does not start
// with an approver that no approver token (--approver-token-file) can
// match; the error names the entry, the reason and the nearest name.
func TestServeRefusesApproverMatchingNobody(t *testing.T) {
	dir := t.TempDir()
	cfg := writeApprovalConfig(t, dir, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"))
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("approvals:\n  approvers: [{method: token, subject: alcie}]\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	apprFile := filepath.Join(dir, "approvers")
	require.NoError(t, os.WriteFile(apprFile, []byte(approver+" name=alice\n"), 0o600))
	t.Setenv(TokenEnv, "")
	t.Setenv(ApproverTokenEnv, "")
	_, err = New(Options{ConfigPath: cfg, Listen: "127.0.0.1:0", ApproverTokenFile: apprFile}, nil)
	var ae *approval.ApproverError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "subject", ae.Field)
	assert.Contains(t, err.Error(), `approvals.approvers[0].subject: "alcie": none of the approver tokens is named so; did you mean "alice"?`)
}

// TestServeReadsTheConfigsApproverTokens: gatehost serve reads
// approvals.page.approver_token_file as every front end does, so an
// approver named in the config and a token in that file match, and the
// token approves over POST /v1/approvals; naming another file with
// --approver-token-file as well is an error, not a silent choice.
func TestServeReadsTheConfigsApproverTokens(t *testing.T) {
	dir := t.TempDir()
	cfg := writeApprovalConfig(t, dir, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"))
	apprFile := filepath.Join(dir, "approvers")
	require.NoError(t, os.WriteFile(apprFile, []byte(approver+" name=alice\n"), 0o600))
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("approvals:\n  approvers: [{method: token, subject: alice}]\n  page:\n    approver_token_file: approvers\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	t.Setenv(TokenEnv, "")
	t.Setenv(ApproverTokenEnv, "")

	other := filepath.Join(dir, "other-approvers")
	require.NoError(t, os.WriteFile(other, []byte(approver+" name=alice\n"), 0o600))
	_, err = New(Options{ConfigPath: cfg, Listen: "127.0.0.1:0", ApproverTokenFile: other}, nil)
	require.ErrorContains(t, err, "--approver-token-file names another file")

	for _, flag := range []string{"", apprFile} { // the same file named twice is one file
		s, err := New(Options{ConfigPath: cfg, Listen: "127.0.0.1:0", ApproverTokenFile: flag}, nil)
		require.NoError(t, err, "flag %q", flag)
		assert.Equal(t, 1, s.approvers.Load().Len(), "the config's approver token is read")
		require.NoError(t, s.Close())
	}
}
