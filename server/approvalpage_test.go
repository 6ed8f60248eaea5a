package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/internal/testing/pageclient"
)

// TestServeApprovalPage: a check refused for want of a person's approval
// opens a request on the approval page (served on the API's listener);
// an approver signs in there with an approver token and approves; the
// identical check made again is accepted, once. Agent tokens cannot sign
// in, and a denial approves nothing.
func TestServeApprovalPage(t *testing.T) {
	ts, _, dir := startApprovalServe(t, nil)
	base := ts.url + "/approvals"
	ask := func(t *testing.T, body []byte, reqID string) (host decisionWithApproval) {
		t.Helper()
		a := ts.checkCall(t, agentDev, "exec", "dev", "", body, reqID)
		require.Equal(t, 200, a.status, string(a.body))
		require.NoError(t, json.Unmarshal(a.body, &host), string(a.body))
		return host
	}

	first := ask(t, callA, "page-1")
	require.Equal(t, abi.Rejected, first.Verdict)
	require.NotNil(t, first.Approval, "the refusal names the approval request")
	require.True(t, approval.ValidRequestID(first.Approval.RequestID))
	assert.Equal(t, approval.StatePending, first.Approval.State)
	assert.Equal(t, base+"/requests/"+first.Approval.RequestID, first.Approval.URL)
	again := ask(t, callA, "page-2")
	assert.Equal(t, first.Approval.RequestID, again.Approval.RequestID, "the identical call meets the same request")

	_, err := pageclient.SignIn(nil, base, agentDev)
	require.Error(t, err, "an agent token does not sign in to the approval page")

	alice, err := pageclient.SignIn(nil, base, approver)
	require.NoError(t, err)
	status, page, err := alice.Get("/requests/" + first.Approval.RequestID)
	require.NoError(t, err)
	require.Equal(t, 200, status)
	assert.Contains(t, page, "merge_pull_request")
	status, body, err := alice.Decide(first.Approval.RequestID, true, "PR 42 reviewed")
	require.NoError(t, err)
	require.Equal(t, 200, status, body)

	run := ask(t, callA, "page-3")
	assert.Equal(t, abi.Accepted, run.Verdict, "approved: the identical check runs")
	assert.Nil(t, run.Approval)
	var rec approval.Record
	for _, r := range records(t, dir+"/events.jsonl") {
		if r.Kind == approval.KindMinted {
			require.NoError(t, json.Unmarshal(r.Data, &rec))
		}
	}
	require.NotNil(t, rec.ApprovedBy)
	assert.Equal(t, "alice", rec.ApprovedBy.Subject, "the record names the approver")
	assert.Equal(t, first.Approval.RequestID, rec.Request)

	replay := ask(t, callA, "page-4")
	assert.Equal(t, abi.Rejected, replay.Verdict, "once")
	assert.NotEqual(t, first.Approval.RequestID, replay.Approval.RequestID)

	// A denial approves nothing; the retry asks anew.
	b := ask(t, callB, "page-5")
	status, body, err = alice.Decide(b.Approval.RequestID, false, "not this one")
	require.NoError(t, err)
	require.Equal(t, 200, status, body)
	retry := ask(t, callB, "page-6")
	assert.Equal(t, abi.Rejected, retry.Verdict)
	assert.NotEqual(t, b.Approval.RequestID, retry.Approval.RequestID)
	assert.True(t, strings.HasPrefix(retry.Approval.URL, base))
}

type decisionWithApproval struct {
	Verdict  abi.Verdict   `json:"verdict"`
	Approval *approvalView `json:"approval"`
}
