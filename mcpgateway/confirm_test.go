package mcpgateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/mcpgateway"
)

// readLog reads the event log's records, in order.
func readLog(t *testing.T, path string) []eventlog.Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var out []eventlog.Record
	for sc.Scan() {
		var r eventlog.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

// logKinds reads the event log's records: kind and reason, in order.
func logKinds(t *testing.T, path string) (kinds, reasons []string) {
	t.Helper()
	for _, r := range readLog(t, path) {
		kinds = append(kinds, r.Kind)
		reasons = append(reasons, r.Reason)
	}
	return kinds, reasons
}

// TestConfirmationByElicitation: a call the exec gate holds for a
// person's confirmation is put to the person through elicitation/create;
// only an explicit approval lets exactly that call through, once, and
// every answer is in the event log.
func TestConfirmationByElicitation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		allowed bool
		reason  string
	}{
		{"approve", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}, true, ""},
		{"accept without approving", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil
		}, false, approval.CodeDeclined},
		{"decline", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}, false, approval.CodeDeclined},
		{"cancel", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}, false, approval.CodeCancelled},
		{"client error", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("no person here")
		}, false, approval.CodeNotAnswered},
		{"timeout", func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			<-ctx.Done() // the person never answers
			return nil, ctx.Err()
		}, false, approval.CodeTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			// Written by the client's handler goroutine, which a timed-out
			// elicitation does not wait for: atomic, for the race detector.
			var askedP atomic.Pointer[mcp.ElicitParams]
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
				ActivateOnList: []string{"*"}, ApprovalTTL: 500 * time.Millisecond})
			cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				askedP.Store(r.Params)
				return tc.answer(ctx, r)
			}})
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			require.False(t, call(t, cs, "write_note", map[string]any{"name": "a", "text": "keep"}).IsError)

			d := call(t, cs, "delete_note", map[string]any{"name": "a"})
			asked := askedP.Load()
			require.NotNil(t, asked, "the person was asked")
			assert.Contains(t, asked.Message, "mcp.notes:delete_note")
			assert.Contains(t, asked.Message, "non_idempotent")
			assert.Contains(t, asked.Message, `"notes"`)
			after := text(call(t, cs, "read_note", map[string]any{"name": "a"}))
			kinds, reasons := logKinds(t, f.logPath)
			if tc.allowed {
				assert.False(t, d.IsError, text(d))
				assert.Equal(t, "deleted", text(d))
				assert.Equal(t, "note: ", after)
				assert.Contains(t, kinds, "approval_minted")
				assert.Contains(t, kinds, "approval_used")
			} else {
				assert.True(t, d.IsError)
				assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
				assert.Equal(t, "note: keep", after, "nothing was deleted")
				assert.Contains(t, kinds, "approval_refused")
				assert.Contains(t, reasons, tc.reason)
				assert.NotContains(t, kinds, "approval_used")
			}
			_, err = eventlog.Verify(f.logPath)
			assert.NoError(t, err)
		})
	}
}

// TestApprovalIsSingleUse: an approval covers one call; the next identical
// call asks again.
func TestApprovalIsSingleUse(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	asked := 0
	cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		if asked > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.False(t, call(t, cs, "delete_note", map[string]any{"name": "a"}).IsError)
	d := call(t, cs, "delete_note", map[string]any{"name": "a"})
	assert.True(t, d.IsError)
	assert.Equal(t, 2, asked)
}

// TestApprovalNotRecordedNotUsed: an approval the event log cannot record
// is not used.
func TestApprovalNotRecordedNotUsed(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		_ = f.evlog.Close() // the log fails while the person answers
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	d := call(t, cs, "delete_note", map[string]any{"name": "a"})
	assert.True(t, d.IsError)
	assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
}

// TestClientGoneDuringElicitation: a client connection that ends while
// the person is asked approves nothing; the refusal is recorded.
func TestClientGoneDuringElicitation(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	asked, release := make(chan struct{}), make(chan struct{})
	ct, st := mcp.NewInMemoryTransports()
	ctx, drop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.ServeTransport(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			<-release // the person never answers: the connection goes first
			return nil, errors.New("gone")
		}}).Connect(context.Background(), ct, sessionful)
	require.NoError(t, err)
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"name": "a"}})
	}()
	<-asked
	drop() // the connection to the client ends
	<-served
	close(release)
	_ = cs.Close()
	// The refusal is the gateway's last act for the call: wait for the
	// record (bounded only to end a hang).
	deadline := time.Now().Add(time.Minute)
	for {
		kinds, reasons := logKinds(t, f.logPath)
		if slices.Contains(kinds, "approval_refused") {
			assert.Contains(t, reasons, approval.CodeNotAnswered)
			assert.NotContains(t, kinds, "approval_used")
			return
		}
		require.True(t, time.Now().Before(deadline), "no approval_refused record")
		time.Sleep(10 * time.Millisecond)
	}
}

// logRecords reads the event log's records of the given kind.
func logRecords(t *testing.T, path, kind string) []eventlog.Record {
	t.Helper()
	var out []eventlog.Record
	for _, r := range readLog(t, path) {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// confirmWrites is the exec policy under which write_note, and only it,
// needs a person's confirmation.
var confirmWrites = []byte(`{"confirm_effects":[],"confirm_tools":["mcp.notes:write_note"]}`)

// rugPullThenApprove returns client options whose person approves, but
// only after the upstream changed write_note's schema and the gateway
// published the change (it announces tools/list_changed after publishing).
func rugPullThenApprove() *mcp.ClientOptions {
	opts, changed := listChanged()
	opts.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		res, err := r.Session.CallTool(ctx, &mcp.CallToolParams{Name: "rug_pull", Arguments: map[string]any{"mode": "schema"}})
		if err != nil {
			return nil, err
		}
		if res.IsError {
			return nil, errors.New("rug_pull refused")
		}
		<-changed
		return approveAll(ctx, r)
	}
	return opts
}

// TestApprovalBoundToRunSnapshot: a tool whose schema changes while the
// person is asked is another call: the approved run is decided on what the
// upstream lists now, is refused as drifted from the trust baseline, and
// nothing is forwarded; the approval is never used.
func TestApprovalBoundToRunSnapshot(t *testing.T) {
	f := newFixtureWith(t, confirmWrites, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, rugPullThenApprove())
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)

	w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "new"})
	assert.True(t, w.IsError, text(w))
	assert.Equal(t, []string{abi.CodeConfirmationRequired, "tool_drifted"}, findingCodes(t, w))
	assert.Equal(t, "note: ", text(call(t, cs, "read_note", map[string]any{"name": "a"})), "nothing was written")

	require.Len(t, logRecords(t, f.logPath, "approval_minted"), 1)
	assert.Empty(t, logRecords(t, f.logPath, "approval_used"))
	assert.NotEmpty(t, logRecords(t, f.logPath, "mcp_tool_drifted"), "the drift is recorded")
	_, err = eventlog.Verify(f.logPath)
	assert.NoError(t, err)
}

// TestApprovalUseNotRecorded: an approval whose use, or refusal, the
// event log cannot record stops the confirmed run before any stage:
// nothing is forwarded, and the agent gets an error saying so.
func TestApprovalUseNotRecorded(t *testing.T) {
	for _, tc := range []struct {
		kind string // the record the log fails
		opts *mcp.ClientOptions
	}{
		{"approval_used", &mcp.ClientOptions{ElicitationHandler: approveAll}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			f := newFixtureWith(t, confirmWrites, nil, nil)
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
			mcpgateway.FailRecords(g, tc.kind)
			cs := connect(t, g, tc.opts)
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)

			d := call(t, cs, "write_note", map[string]any{"name": "a", "text": "new"})
			assert.True(t, d.IsError)
			assert.Contains(t, text(d), "not recorded")
			assert.Contains(t, text(d), "nothing was sent")
			assert.NotContains(t, text(d), "new", "arguments are not echoed")
			assert.Equal(t, "note: ", text(call(t, cs, "read_note", map[string]any{"name": "a"})), "nothing was written")
			assert.Len(t, logRecords(t, f.logPath, "approval_minted"), 1)
			assert.Empty(t, logRecords(t, f.logPath, tc.kind))
		})
	}
}

// TestApprovalNotReplayable: an approval is the host's Confirmer's to
// take, once: its id presented again, for the same call or another, or an
// id the gateway never minted, confirms nothing (the run is rejected with
// confirmation_required) and the refusal is recorded with the run.
func TestApprovalNotReplayable(t *testing.T) {
	f := newFixtureWith(t, confirmWrites, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: approveAll})
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.False(t, call(t, cs, "write_note", map[string]any{"name": "a", "text": "once"}).IsError)
	used := logRecords(t, f.logPath, "approval_used")
	require.Len(t, used, 1)
	var ap struct {
		ID      string `json:"approval_id"`
		Session string `json:"session"`
	}
	require.NoError(t, json.Unmarshal(used[0].Data, &ap))
	require.NotEmpty(t, ap.ID)

	for _, tc := range []struct {
		name, token, params, reason string
	}{
		{"same call", ap.ID, `{"name":"write_note","arguments":{"name":"a","text":"once"}}`, approval.CodeUsed},
		{"another call", ap.ID, `{"name":"write_note","arguments":{"name":"a","text":"twice"}}`, approval.CodeUsed},
		{"never minted", "ap-00000000000000000000000000000000", `{"name":"write_note","arguments":{"name":"a","text":"once"}}`, approval.CodeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := g.Host().Check(context.Background(), "exec", []byte(tc.params),
				host.RunOptions{Format: subject.FormatMCP, Session: ap.Session, ConfirmationToken: tc.token})
			require.NoError(t, err)
			assert.Equal(t, abi.Rejected, d.Verdict)
			var codes []string
			for _, f := range d.Findings {
				codes = append(codes, f.Code)
			}
			assert.Equal(t, []string{abi.CodeConfirmationRequired}, codes)
			var refused []string
			for _, r := range logRecords(t, f.logPath, "approval_refused") {
				if r.RunID == d.RunID {
					refused = append(refused, r.Reason)
				}
			}
			assert.Equal(t, []string{tc.reason}, refused)
		})
	}
	assert.Len(t, logRecords(t, f.logPath, "approval_used"), 1, "used once")
}
