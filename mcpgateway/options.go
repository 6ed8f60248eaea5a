package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/gatehost/gatehost/approval"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// MaxProcesses bounds Upstream.Processes.
const MaxProcesses = 64

// Defaults of Options' zero fields.
const (
	// DefaultCallTimeout bounds one forwarded tools/call upstream.
	DefaultCallTimeout = 60 * time.Second
	// DefaultApprovalTTL is how long a person's approval stays usable:
	// approval.DefaultTTL.
	DefaultApprovalTTL = approval.DefaultTTL
	// DefaultMaxResultBytes caps one upstream tools/call result, as JSON.
	DefaultMaxResultBytes = 8 << 20
	// DefaultRestartBackoff is the first wait before a crashed upstream is
	// started again; it doubles up to DefaultMaxRestartBackoff.
	DefaultRestartBackoff    = 250 * time.Millisecond
	DefaultMaxRestartBackoff = 30 * time.Second
	// DefaultSessionIdleTimeout closes a Streamable HTTP session that has
	// sent no request for this long.
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultMaxSessions caps the live MCP sessions of one gateway, and
	// so (each session has its own stdio upstream processes) the
	// upstream processes it starts: MaxSessions × stdio upstreams.
	DefaultMaxSessions = 64
	// DefaultMaxSessionsPerPrincipal caps one principal's live sessions
	// (anonymous callers share one count).
	DefaultMaxSessionsPerPrincipal = 16
	// DefaultConnectTimeout bounds starting an upstream: its process,
	// initialize, and the first complete tools/list.
	DefaultConnectTimeout = 20 * time.Second
	// DefaultMaxListPages, DefaultMaxListItems and DefaultMaxListBytes
	// bound one complete listing (tools, resources, prompts) of one
	// upstream: the pages followed, the items kept, and their JSON size.
	DefaultMaxListPages = 100
	DefaultMaxListItems = 5000
	DefaultMaxListBytes = 8 << 20
	// DefaultMaxApprovalArgumentBytes is the most argument JSON a person
	// is shown whole in an approval prompt; a call with more cannot be
	// approved that way (what cannot be shown cannot be approved).
	DefaultMaxApprovalArgumentBytes = 16 << 10
	// DefaultMaxUpstreamRequestsPerMinute is the budget of requests one
	// upstream may make of one caller's client: enough for a server
	// that samples many times in one call, and a bound on what a server
	// that floods can make the gateway record or a person see.
	DefaultMaxUpstreamRequestsPerMinute = 120
)

// Elicitation modes (Options.Elicitation).
const (
	// ElicitURL sends the person to the approval page with URL-mode
	// elicitation (MCP 2025-11-25, SEP-1036) when the client declares it,
	// and waits for the approver's decision; a client without it gets the
	// call refused with the page's URL, and the identical call made again
	// once approved runs. The client never answers for the person.
	ElicitURL = "url"
	// ElicitForm asks with form-mode elicitation, and the client's answer
	// is the approval (approver "mcp-client"): whoever controls the client,
	// the agent included, can approve. An explicit choice for a person at a
	// trusted client.
	ElicitForm = "form"
	// ElicitNone never elicits: the call is refused with the page's URL.
	ElicitNone = "none"
)

// Trust levels of an upstream: what provenance its tools get in the
// catalog (host/catalog Provenance), and so what the exec gate makes of
// them.
const (
	// TrustConfig (the default): the operator's config names the server,
	// so its tools have provenance mcp_config{NAME} and source NAME.
	TrustConfig = "config"
	// TrustUnverified: nobody vouches for the server; its tools have
	// provenance unverified, which the exec gate denies (untrusted_source).
	TrustUnverified = "unverified"
)

// Upstream is one real MCP server behind the gateway. Exactly one of
// Command and URL is set.
type Upstream struct {
	// Name identifies the upstream: 1 to 64 bytes of [a-z0-9_-]. Its tools
	// get the catalog namespace mcp.NAME and, when their names collide
	// with another upstream's, the wire name NAME.TOOL.
	Name string
	// Command is a stdio server: argv, no shell. The gateway starts
	// Processes of them, shared by every downstream session (unless
	// SessionScoped), and restarts one, with backoff, when it exits.
	Command []string
	// Processes bounds a shared stdio upstream's processes (0 means 1,
	// at most MaxProcesses): each downstream session is given one of them
	// when it starts, in turn, and uses it for its whole life. Not with
	// SessionScoped, not for URL.
	Processes int
	// SessionScoped gives a stdio upstream one process per downstream
	// session, as servers that keep per-session state need. Only a
	// session-scoped upstream's requests to the client (roots, sampling,
	// elicitation), its resource subscriptions and its log messages are
	// relayed: a shared process's cannot be attributed to one session
	// (docs/MCP-GATEWAY.md, "Shared and session-scoped upstreams"). A URL
	// upstream is always per session (its credentials may be the caller's).
	SessionScoped bool
	// Env are extra KEY=VALUE variables for Command, added to the
	// gateway's own environment.
	Env []string
	// URL is a Streamable HTTP server's endpoint.
	URL string
	// Trust is TrustConfig ("" means it) or TrustUnverified.
	Trust string
	// Headers are set on every HTTP request to a URL upstream (static
	// credentials such as an API key). Not for Command.
	Headers []Header
	// TokenExchange, for a URL upstream, sends each caller's calls with a
	// token exchanged for the caller's own (RFC 8693); without a caller
	// token (stdio, anonymous) the upstream is refused. Not for Command.
	TokenExchange *TokenExchange
	// ProtocolVersion is the MCP revision the gateway asks the upstream
	// for: "" (2025-11-25, or the downstream client's older revision on a
	// connection of its own) or "2026-07-28", where what the upstream
	// asks of the client during a call comes in the call's answer
	// (input_required, SEP-2322): passed to a 2026-07-28 client in the
	// gateway's answer, asked of an older client by the gateway, on a
	// shared connection too. An upstream that does not serve it fails to
	// connect.
	ProtocolVersion string
}

// Options configure a Gateway. Zero fields take the defaults above.
type Options struct {
	// Pipeline names the host pipeline every tools/call runs; its subject
	// kind must be tool_call. Required.
	Pipeline string
	// Upstreams are the servers behind the gateway; at least one, with
	// unique names.
	Upstreams []Upstream
	// CoreTools are pinned in every new session's core (catalog ids, wire
	// names or aliases, as `gatehost session create` takes them; "*" for
	// every tool the upstreams list when the session starts). A name no
	// upstream lists, or a tool of an unverified upstream, is skipped with
	// a warning.
	CoreTools []string
	// ActivateOnList are granted to a session when its client lists
	// tools: names as in CoreTools, or "*" for every listed tool. A tool
	// the session already holds, drifted or not, is never re-granted by a
	// listing: a drifted grant stays denied until an operator re-grants
	// it (`gatehost session activate`).
	ActivateOnList []string
	// ListSessionToolsOnly answers tools/list with only the tools the
	// session holds (core or activated) after activation; otherwise every
	// upstream tool is listed.
	ListSessionToolsOnly bool
	// CallTimeout bounds one forwarded tools/call; default
	// DefaultCallTimeout. At it the call is cancelled upstream and the
	// agent gets an error result.
	CallTimeout time.Duration
	// ApprovalTTL is how long an approval is usable (gatehost mcp: the
	// config's approvals.ttl), and how long the gateway waits for the
	// person's answer; default DefaultApprovalTTL, at most approval.MaxTTL.
	ApprovalTTL time.Duration
	// ApprovalStore holds the approvals the gateway mints and takes; nil
	// is the gateway's memory. A store shared with gatehost serve (a file,
	// PostgreSQL) lets an approval minted there confirm a call here.
	ApprovalStore approval.Store
	// Elicitation is how the gateway asks for a person's approval through
	// the MCP client: ElicitURL (default), ElicitForm or ElicitNone.
	Elicitation string
	// Approvers is who may approve a call on the approval page
	// (approval.Rule): with none, no call that needs a person runs,
	// except through ElicitForm.
	Approvers approval.Rule
	// ApprovalPageURL is the approval page's absolute base URL as a
	// person's browser reaches it (Gateway.SetApprovalPageURL may set it
	// once the page's listener is bound); empty: no page, and a call that
	// needs a person is refused saying so.
	ApprovalPageURL string
	// NotifyApproval is told of each new approval request (webhooks);
	// nil tells nobody.
	NotifyApproval func(context.Context, approval.Request)
	// MaxPendingApprovals caps the requests waiting; 0 is
	// approval.DefaultMaxPending.
	MaxPendingApprovals int
	// MaxResultBytes caps one upstream tools/call result as JSON; default
	// DefaultMaxResultBytes. A larger result is replaced by an error.
	MaxResultBytes int
	// RestartBackoff and MaxRestartBackoff pace the restarts of a crashed
	// upstream; defaults DefaultRestartBackoff and DefaultMaxRestartBackoff.
	RestartBackoff, MaxRestartBackoff time.Duration
	// SessionIdleTimeout closes an idle Streamable HTTP session and its
	// upstreams; default DefaultSessionIdleTimeout.
	SessionIdleTimeout time.Duration
	// MaxSessions and MaxSessionsPerPrincipal cap live MCP sessions (see
	// DefaultMaxSessions): initialize past a cap is refused and recorded.
	MaxSessions, MaxSessionsPerPrincipal int
	// ConnectTimeout bounds starting one upstream, initialize and first
	// listing included; default DefaultConnectTimeout. A call waiting on
	// a restarting upstream waits at most this long.
	ConnectTimeout time.Duration
	// MaxListPages, MaxListItems and MaxListBytes bound one complete
	// listing of one upstream; defaults DefaultMaxList*. A listing past a
	// bound, or one that repeats a cursor, fails that upstream only.
	MaxListPages, MaxListItems, MaxListBytes int
	// MaxApprovalArgumentBytes: see DefaultMaxApprovalArgumentBytes.
	MaxApprovalArgumentBytes int
	// MaxUpstreamRequestsPerMinute bounds the requests one upstream makes
	// of one caller's client (roots/list, sampling/createMessage,
	// elicitation/create; a shared process's, of all its callers'), as a
	// token bucket of this many refilled evenly over a minute; default
	// DefaultMaxUpstreamRequestsPerMinute. One past it is refused with a
	// JSON-RPC error and never reaches the client; refusals are recorded
	// within about a second, each record counting those it stands for.
	MaxUpstreamRequestsPerMinute int
	// Baseline holds the tool definitions trusted across sessions, processes
	// and replicas (package baseline); nil keeps them in memory for the
	// gateway's life. See docs/MCP-GATEWAY.md "The edge: trust baseline,
	// identity, caps".
	Baseline baseline.Store
	// RequireApproval: no tool enters the baseline by being listed; an
	// operator approves each (gatehost mcp approve). Otherwise a tool
	// that no baseline entry holds yet is taken into it at its first
	// listing when CoreTools or ActivateOnList name it.
	RequireApproval bool
	// Logger receives the gateway's log lines; default slog.Default().
	Logger *slog.Logger
}

// OptionsError is an Options value the gateway refuses, naming the field.
type OptionsError struct {
	// Field is a dotted path such as upstreams[1].url.
	Field  string
	Reason string
}

func (e *OptionsError) Error() string { return "mcpgateway: " + e.Field + ": " + e.Reason }

// ErrOptions is matched (errors.Is) by every *OptionsError.
var ErrOptions = errors.New("mcpgateway: invalid options")

func (e *OptionsError) Is(target error) bool { return target == ErrOptions }

var upstreamNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// normalize checks opts and fills the defaults.
func (o Options) normalize() (Options, error) {
	bad := func(field, format string, args ...any) (Options, error) {
		return Options{}, &OptionsError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if o.Pipeline == "" {
		return bad("pipeline", "required")
	}
	if len(o.Upstreams) == 0 {
		return bad("upstreams", "at least one upstream is required")
	}
	o.Upstreams = append([]Upstream(nil), o.Upstreams...) // the caller's slice stays as given
	seen := map[string]bool{}
	for i, u := range o.Upstreams {
		f := fmt.Sprintf("upstreams[%d]", i)
		if !upstreamNameRE.MatchString(u.Name) {
			return bad(f+".name", "%q is not 1 to 64 bytes of [a-z0-9_-]", u.Name)
		}
		if seen[u.Name] {
			return bad(f+".name", "%q is named twice", u.Name)
		}
		seen[u.Name] = true
		switch {
		case len(u.Command) > 0 && u.URL != "":
			return bad(f, "set command or url, not both")
		case len(u.Command) == 0 && u.URL == "":
			return bad(f, "set command (a stdio server) or url (a Streamable HTTP server)")
		case len(u.Command) > 0 && u.Command[0] == "":
			return bad(f+".command[0]", "empty program name")
		}
		if err := checkCredentials(f, &o.Upstreams[i]); err != nil {
			return Options{}, err
		}
		switch {
		case u.Processes < 0 || u.Processes > MaxProcesses:
			return bad(f+".processes", "%d is not 1 to %d", u.Processes, MaxProcesses)
		case u.Processes > 0 && u.URL != "":
			return bad(f+".processes", "only a command upstream takes processes (a url upstream has one session per downstream session)")
		case u.Processes > 0 && u.SessionScoped:
			return bad(f+".processes", "a session_scoped upstream has one process per session; remove one")
		case u.SessionScoped && u.URL != "":
			return bad(f+".session_scoped", "only a command upstream takes session_scoped (a url upstream is always per session)")
		}
		switch u.ProtocolVersion {
		case "", sessionRevision, statelessRevision:
		default:
			return bad(f+".protocol_version", "%q is not %q or %q", u.ProtocolVersion, sessionRevision, statelessRevision)
		}
		switch u.Trust {
		case "":
			o.Upstreams[i].Trust = TrustConfig
		case TrustConfig, TrustUnverified:
		default:
			return bad(f+".trust", "%q is not %q or %q", u.Trust, TrustConfig, TrustUnverified)
		}
	}
	for _, d := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"call_timeout", &o.CallTimeout, DefaultCallTimeout},
		{"approval_ttl", &o.ApprovalTTL, DefaultApprovalTTL},
		{"restart_backoff", &o.RestartBackoff, DefaultRestartBackoff},
		{"max_restart_backoff", &o.MaxRestartBackoff, DefaultMaxRestartBackoff},
		{"session_idle_timeout", &o.SessionIdleTimeout, DefaultSessionIdleTimeout},
		{"connect_timeout", &o.ConnectTimeout, DefaultConnectTimeout},
	} {
		if *d.v < 0 {
			return bad(d.field, "negative duration %s", *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, n := range []struct {
		field string
		v     *int
		def   int
	}{
		{"max_result_bytes", &o.MaxResultBytes, DefaultMaxResultBytes},
		{"max_sessions", &o.MaxSessions, DefaultMaxSessions},
		{"max_sessions_per_principal", &o.MaxSessionsPerPrincipal, DefaultMaxSessionsPerPrincipal},
		{"max_list_pages", &o.MaxListPages, DefaultMaxListPages},
		{"max_list_items", &o.MaxListItems, DefaultMaxListItems},
		{"max_list_bytes", &o.MaxListBytes, DefaultMaxListBytes},
		{"max_approval_argument_bytes", &o.MaxApprovalArgumentBytes, DefaultMaxApprovalArgumentBytes},
		{"max_upstream_requests_per_minute", &o.MaxUpstreamRequestsPerMinute, DefaultMaxUpstreamRequestsPerMinute},
	} {
		if *n.v < 0 {
			return bad(n.field, "negative value %d", *n.v)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	switch o.Elicitation {
	case "":
		o.Elicitation = ElicitURL
	case ElicitURL, ElicitForm, ElicitNone:
	default:
		return bad("elicitation", "%q is not %q, %q or %q", o.Elicitation, ElicitURL, ElicitForm, ElicitNone)
	}
	if err := o.Approvers.Check(); err != nil {
		return bad("approvers", "%v", err)
	}
	if o.MaxPendingApprovals < 0 {
		return bad("max_pending_approvals", "negative value %d", o.MaxPendingApprovals)
	}
	if o.Baseline == nil {
		o.Baseline = baseline.NewMemory()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
