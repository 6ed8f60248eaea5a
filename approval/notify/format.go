package notify

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/internal/runecut"
)

// The formats of a webhook.
const (
	// FormatJSON is the generic body (Event), signed.
	FormatJSON = "json"
	// FormatSlack is a Slack incoming-webhook message without the call's
	// arguments: a link to the approval page shows them.
	FormatSlack = "slack"
)

// EventRequested is the type of the event of a new request.
const EventRequested = "approval.requested"

// Event is the body of a json webhook: the request a person is asked to
// decide, whole, and the page where they decide it.
type Event struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Pipeline  string          `json:"pipeline"`
	Tool      string          `json:"tool"`
	Upstream  string          `json:"upstream,omitempty"`
	Effect    string          `json:"effect,omitempty"`
	Caller    *abi.Principal  `json:"caller,omitempty"`
	Findings  []abi.Finding   `json:"findings"`
	Arguments json.RawMessage `json:"arguments"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	// URL is the request's approval page, or "" when none is configured.
	URL string `json:"url"`
}

// NewEvent returns the event of request r, whose page is url.
func NewEvent(r approval.Request, url string) Event {
	args := r.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	findings := r.Findings
	if findings == nil {
		findings = []abi.Finding{}
	}
	return Event{
		Type: EventRequested, RequestID: r.ID, Pipeline: r.Pipeline, Tool: r.Tool,
		Upstream: r.Upstream, Effect: r.Effect, Caller: r.Caller, Findings: findings,
		Arguments: args, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), URL: url,
	}
}

// slackFieldMax bounds a value shown in a Slack field (Slack takes 2000
// characters), before its escapes.
const slackFieldMax = 500

// slackMessage is a Slack incoming-webhook message.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []any       `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackButton struct {
	Type string    `json:"type"`
	Text slackText `json:"text"`
	URL  string    `json:"url,omitempty"`
}

// slackEscape escapes the three characters Slack's mrkdwn gives meaning
// to, so that a tool or caller name cannot mention a channel or forge a
// link, and cuts s to max bytes.
func slackEscape(s string, max int) string {
	s = runecut.Cut(s, max, "…")
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// orNone is s, or a dash for an empty value.
func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// NewSlackMessage returns the Slack message of request r, whose page is
// url: the tool, upstream, caller, effect, expiry and the link. The
// arguments are left out (they may be secret); the page shows them.
func NewSlackMessage(r approval.Request, url string) ([]byte, error) {
	tool := slackEscape(r.Tool, slackFieldMax)
	field := func(name, value string) slackText {
		return slackText{Type: "mrkdwn", Text: "*" + name + "*\n" + slackEscape(orNone(value), slackFieldMax)}
	}
	expires := r.ExpiresAt.UTC().Format(time.RFC3339)
	m := slackMessage{Blocks: []slackBlock{
		{Type: "header", Text: &slackText{Type: "plain_text", Text: "Approval requested"}},
		{Type: "section", Fields: []slackText{
			field("Tool", r.Tool),
			field("Upstream", r.Upstream),
			field("Caller", approval.PrincipalName(r.Caller)),
			field("Effect", r.Effect),
			field("Pipeline", r.Pipeline),
			field("Expires", expires),
		}},
	}}
	text := "Approval requested: " + tool + " (caller " + slackEscape(orNone(approval.PrincipalName(r.Caller)), slackFieldMax) + ", expires " + expires + ")"
	if url != "" {
		m.Blocks = append(m.Blocks, slackBlock{Type: "actions", Elements: []any{slackButton{
			Type: "button", Text: slackText{Type: "plain_text", Text: "Review the call"}, URL: url,
		}}})
		text += ": <" + url + "|review>"
	} else {
		m.Blocks = append(m.Blocks, slackBlock{Type: "context", Elements: []any{
			slackText{Type: "mrkdwn", Text: "Request " + slackEscape(r.ID, slackFieldMax) + ": no approval page is configured"},
		}})
		text += ", request " + slackEscape(r.ID, slackFieldMax)
	}
	m.Text = text
	return marshal(m)
}

// marshal is json.Marshal without HTML escaping: the bodies are read by
// programs, and Slack's own escapes stay readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
