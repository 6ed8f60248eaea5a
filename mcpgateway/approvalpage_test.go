package mcpgateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/mcpgateway"
)

// The approvers of these tests: alice, by a claim.
var (
	pageRule = approval.Rule{Approvers: []approval.Approver{{Claims: map[string]string{"groups": "approvers"}}}}
	alice    = &abi.Principal{Issuer: "https://id.example", Subject: "alice", Method: abi.MethodOIDC,
		Claims: map[string]any{"groups": []any{"approvers"}}}
)

const pageURL = "https://gate.example/approvals"

func pageGateway(t *testing.T, mode string, page string) (*fixture, *mcpgateway.Gateway) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"},
		Elicitation: mode, Approvers: pageRule, ApprovalPageURL: page})
	return f, g
}

func approvalView(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	v, ok := r.Meta[mcpgateway.MetaApproval].(map[string]any)
	require.True(t, ok, "the refusal carries the approval request under _meta: %v", r.Meta)
	return v
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestApprovalPageClientCannotApprove: with the page (the default mode),
// a client that answers every elicitation approves nothing: it is never
// asked a yes/no question, the call is refused with the page's URL, and
// it runs only once an approver decides, when the agent calls again.
func TestApprovalPageClientCannotApprove(t *testing.T) {
	for _, mode := range []string{mcpgateway.ElicitURL, mcpgateway.ElicitNone} {
		t.Run(mode, func(t *testing.T) {
			_, g := pageGateway(t, mode, pageURL)
			asked := 0
			cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}})
			ctx := context.Background()
			_, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			args := map[string]any{"name": "a"}
			d := call(t, cs, "delete_note", args)
			require.True(t, d.IsError)
			assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
			assert.Zero(t, asked, "a form-only client is never asked")
			v := approvalView(t, d)
			id, _ := v["request_id"].(string)
			require.True(t, approval.ValidRequestID(id))
			assert.Equal(t, pageURL+"/requests/"+id, v["url"])
			assert.Contains(t, resultText(d), pageURL+"/requests/"+id)

			// The identical call again meets the same request, still pending.
			d = call(t, cs, "delete_note", args)
			require.True(t, d.IsError)
			assert.Equal(t, id, approvalView(t, d)["request_id"])

			r, err := g.Desk().Get(ctx, id)
			require.NoError(t, err)
			assert.JSONEq(t, `{"name":"a"}`, string(r.Arguments))
			assert.Equal(t, "notes", r.Upstream)
			require.NotEmpty(t, r.Findings)
			_, err = g.Desk().Decide(ctx, id, alice, true, "")
			require.NoError(t, err)

			assert.False(t, call(t, cs, "delete_note", args).IsError, "approved: the identical call runs")
			d = call(t, cs, "delete_note", args)
			require.True(t, d.IsError, "once")
			assert.NotEqual(t, id, approvalView(t, d)["request_id"], "the next identical call asks anew")
			other := call(t, cs, "delete_note", map[string]any{"name": "b"})
			require.True(t, other.IsError, "an approval is for its call alone")
			assert.Zero(t, asked)
		})
	}
}

// TestApprovalPageURLElicitation: a client that declares URL mode is sent
// to the request's page and the call waits for the approver's decision.
func TestApprovalPageURLElicitation(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approve], func(t *testing.T) {
			_, g := pageGateway(t, mcpgateway.ElicitURL, pageURL)
			ctx := context.Background()
			urls := make(chan *mcp.ElicitParams, 1)
			completed := make(chan string, 1)
			cs := connect(t, g, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					urls <- r.Params
					// What the client answers approves nothing: it only
					// says the person was shown the link.
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
				ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
					completed <- r.Params.ElicitationID
				},
			})
			_, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			// The person: opens the URL the client shows, and decides.
			go func() {
				p := <-urls
				id := strings.TrimPrefix(p.URL, pageURL+"/requests/")
				assert.Equal(t, "url", p.Mode)
				assert.Equal(t, id, p.ElicitationID)
				r, err := g.Desk().Get(ctx, id)
				if assert.NoError(t, err) {
					assert.JSONEq(t, `{"name":"a"}`, string(r.Arguments))
				}
				_, err = g.Desk().Decide(ctx, id, alice, approve, "checked")
				assert.NoError(t, err)
			}()
			d := call(t, cs, "delete_note", map[string]any{"name": "a"})
			assert.Equal(t, !approve, d.IsError, resultText(d))
			if !approve {
				assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
				assert.Contains(t, resultText(d), "An approver denied this call")
				assert.Equal(t, approval.StateDenied, approvalView(t, d)["state"])
			}
			assert.True(t, approval.ValidRequestID(<-completed), "notifications/elicitation/complete names the request")
		})
	}
}

// TestApprovalPageNone: without a page nobody can approve; the agent is
// told so, and nothing runs.
func TestApprovalPageNone(t *testing.T) {
	_, g := pageGateway(t, mcpgateway.ElicitURL, "")
	cs := connect(t, g, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}, Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("no page: nothing to elicit")
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}})
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	d := call(t, cs, "delete_note", map[string]any{"name": "a"})
	require.True(t, d.IsError)
	assert.Contains(t, resultText(d), "serves no approval page")
	_, hasURL := approvalView(t, d)["url"]
	assert.False(t, hasURL)
}

// TestApprovalPageElicitationDeclined: a person who declines to open the
// page approves nothing, and the request stays for an approver.
func TestApprovalPageElicitationDeclined(t *testing.T) {
	_, g := pageGateway(t, mcpgateway.ElicitURL, pageURL)
	cs := connect(t, g, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	d := call(t, cs, "delete_note", map[string]any{"name": "a"})
	require.True(t, d.IsError)
	assert.Equal(t, approval.StatePending, approvalView(t, d)["state"])
}
