package mcpgateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/mcpgateway"
)

// logKinds reads the event log's records: kind and reason, in order.
func logKinds(t *testing.T, path string) (kinds, reasons []string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r eventlog.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
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
		}, true, "approved"},
		{"accept without approving", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil
		}, false, "declined"},
		{"decline", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}, false, "declined"},
		{"cancel", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}, false, "cancelled"},
		{"client error", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("no person here")
		}, false, "failed"},
		{"timeout", func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			<-ctx.Done() // the person never answers
			return nil, ctx.Err()
		}, false, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			var asked *mcp.ElicitParams
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
				ActivateOnList: []string{"*"}, ApprovalTTL: 500 * time.Millisecond})
			cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = r.Params
				return tc.answer(ctx, r)
			}})
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			require.False(t, call(t, cs, "write_note", map[string]any{"name": "a", "text": "keep"}).IsError)

			d := call(t, cs, "delete_note", map[string]any{"name": "a"})
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
				assert.Equal(t, []string{"confirmation_required"}, findingCodes(t, d))
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
	assert.Equal(t, []string{"confirmation_required"}, findingCodes(t, d))
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
		}}).Connect(context.Background(), ct, nil)
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
			assert.Contains(t, reasons, "failed")
			assert.NotContains(t, kinds, "approval_used")
			return
		}
		require.True(t, time.Now().Before(deadline), "no approval_refused record")
		time.Sleep(10 * time.Millisecond)
	}
}
