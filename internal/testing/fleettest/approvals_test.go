package fleettest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/internal/testing/pageclient"
)

// TestFleetApprovalPage: two replicas on one PostgreSQL. A call that needs
// a person is refused on replica A with a request on the approval page;
// an approver approves it on A's page; the identical call then runs on
// replica B, once: a replay on B or on A asks anew.
func TestFleetApprovalPage(t *testing.T) {
	f, _ := startFleet(t, 2, "5s", fmt.Sprintf("{confirm_tools: [%q]}", tool))
	status, err := f.session(0, "activate", "s1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	type answer struct {
		Verdict  string `json:"verdict"`
		Approval *struct {
			RequestID string `json:"request_id"`
			State     string `json:"state"`
			URL       string `json:"url"`
		} `json:"approval"`
	}
	ask := func(i int) answer {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+f.addr(i)+"/v1/pipelines/exec/check?session=s1", strings.NewReader(call))
		req.Header.Set("Authorization", "Bearer "+agentToken)
		resp, err := f.client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		var a answer
		require.NoError(t, json.Unmarshal(b, &a), string(b))
		return a
	}

	onA := ask(0)
	require.Equal(t, "rejected", onA.Verdict)
	require.NotNil(t, onA.Approval)
	require.True(t, approval.ValidRequestID(onA.Approval.RequestID))
	assert.Equal(t, "http://"+f.addr(0)+"/approvals/requests/"+onA.Approval.RequestID, onA.Approval.URL)
	onB := ask(1)
	assert.Equal(t, onA.Approval.RequestID, onB.Approval.RequestID, "one request per call across replicas")

	page, err := pageclient.SignIn(f.client, "http://"+f.addr(0)+"/approvals", approverToken)
	require.NoError(t, err)
	status, body, err := page.Decide(onA.Approval.RequestID, true, "approved on A")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)

	assert.Equal(t, "accepted", ask(1).Verdict, "approved on A, run on B")
	replayB, replayA := ask(1), ask(0)
	assert.Equal(t, "rejected", replayB.Verdict, "once")
	assert.Equal(t, "rejected", replayA.Verdict, "once, on every replica")
	assert.NotEqual(t, onA.Approval.RequestID, replayB.Approval.RequestID)
}
