package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatehost/gatehost/approval"
)

// Approval stores (approvals.store).
const (
	ApprovalsMemory   = "memory"   // this process only
	ApprovalsFile     = "file"     // one file, shared by the gatehost processes of a machine
	ApprovalsPostgres = "postgres" // the PostgreSQL store, shared by a fleet
)

// DefaultApprovalsFile is the approvals file of approvals.store file with
// no approvals.path: beside the event log.
const DefaultApprovalsFile = "approvals.json"

// approvalsConfig is the approvals: section as written.
type approvalsConfig struct {
	TTL               time.Duration       `mapstructure:"ttl"`
	Store             string              `mapstructure:"store"`
	Path              string              `mapstructure:"path"`
	Approvers         []approval.Approver `mapstructure:"approvers"`
	AllowSelfApproval bool                `mapstructure:"allow_self_approval"`
	Elicitation       string              `mapstructure:"elicitation"`
	MaxPending        int                 `mapstructure:"max_pending"`
	Page              approvalPageConfig  `mapstructure:"page"`
	Webhooks          []webhookConfig     `mapstructure:"webhooks"`
}

type approvalPageConfig struct {
	URL               string        `mapstructure:"url"`
	Listen            string        `mapstructure:"listen"`
	ApproverTokenFile string        `mapstructure:"approver_token_file"`
	CookieKeyFile     string        `mapstructure:"cookie_key_file"`
	SessionTTL        time.Duration `mapstructure:"session_ttl"`
	OIDC              *struct {
		Issuer           string   `mapstructure:"issuer"`
		ClientID         string   `mapstructure:"client_id"`
		ClientSecretFile string   `mapstructure:"client_secret_file"`
		Scopes           []string `mapstructure:"scopes"`
		Claims           []string `mapstructure:"claims"`
	} `mapstructure:"oidc"`
}

type webhookConfig struct {
	Name       string        `mapstructure:"name"`
	URL        string        `mapstructure:"url"`
	Format     string        `mapstructure:"format"`
	SecretFile string        `mapstructure:"secret_file"`
	SecretEnv  string        `mapstructure:"secret_env"`
	Timeout    time.Duration `mapstructure:"timeout"`
	Retries    *int          `mapstructure:"retries"`
}

// Elicitation modes (approvals.elicitation): how gatehost mcp asks for a
// person's approval through the MCP client.
const (
	// ElicitURL (the default) sends the person to the approval page with
	// URL-mode elicitation (MCP 2025-11-25) when the client supports it;
	// otherwise the call is refused with the page's URL, and the identical
	// call made again once approved runs. The client only relays a link:
	// it never answers for the person.
	ElicitURL = "url"
	// ElicitForm asks with form-mode elicitation, and the MCP client's
	// answer is the approval: whoever controls the client (the agent
	// included) can approve. For a person at a trusted client only.
	ElicitForm = "form"
	// ElicitNone never elicits: the call is refused with the page's URL.
	ElicitNone = "none"
)

// ApprovalPage is approvals.page, resolved.
type ApprovalPage struct {
	// URL is the page's absolute base URL as browsers reach it; empty: the
	// URL of the listener that serves it.
	URL string
	// Listen is a listener of the page's own (gatehost mcp over stdio, or
	// a page apart from the API); empty: the front end's --listen.
	Listen string
	// ApproverTokenFile holds approver tokens for token sign-in, resolved.
	ApproverTokenFile string
	// CookieKeyFile holds the sign-in cookie's HMAC key (32+ bytes), shared
	// by a fleet's replicas; empty: a random key per process.
	CookieKeyFile string
	// SessionTTL is how long a sign-in lasts; 0 is the page's default.
	SessionTTL time.Duration
	// OIDC is the sign-in through an OpenID provider, or nil.
	OIDC *ApprovalPageOIDC
}

// ApprovalPageOIDC is approvals.page.oidc: authorization-code sign-in
// with PKCE.
type ApprovalPageOIDC struct {
	Issuer, ClientID, ClientSecretFile string
	Scopes, Claims                     []string
}

// Webhook is one of approvals.webhooks, resolved (the secret is read by
// whoever opens it).
type Webhook struct {
	Name, URL, Format     string
	SecretFile, SecretEnv string
	Timeout               time.Duration
	// Retries is nil for the default.
	Retries *int
}

// Approvals is the resolved approvals: section: a person's approvals of
// single tool calls, minted by gatehost serve (POST /v1/approvals) and by
// gatehost mcp (elicitation), and presented to either (package approval).
type Approvals struct {
	// TTL is approvals.ttl (1s to 24h; default approval.DefaultTTL), or
	// the deprecated mcp.approval_ttl.
	TTL time.Duration
	// TTLSet tells whether the file set it.
	TTLSet bool
	// Store is ApprovalsMemory, ApprovalsFile or ApprovalsPostgres; the
	// default is ApprovalsPostgres with store.kind postgres, else
	// ApprovalsMemory.
	Store string
	// Path is the approvals file (ApprovalsFile): approvals.path, resolved,
	// default DefaultApprovalsFile beside event_log.path.
	Path string
	// Rule is who may approve (approvals.approvers,
	// approvals.allow_self_approval).
	Rule approval.Rule
	// Elicitation is ElicitURL (default), ElicitForm or ElicitNone.
	Elicitation string
	// MaxPending caps the requests waiting (approvals.max_pending); 0 is
	// approval.DefaultMaxPending.
	MaxPending int
	// Page is approvals.page.
	Page ApprovalPage
	// Webhooks are approvals.webhooks.
	Webhooks []Webhook
	// Deprecated says what the file sets under a deprecated key, for the
	// caller to warn about.
	Deprecated []string
}

// resolveApprovals checks the approvals: section; mcpTTL is the
// deprecated mcp.approval_ttl.
func resolveApprovals(ac approvalsConfig, mcpTTL time.Duration, st Store, logPath string, rel func(string) string) (Approvals, error) {
	a := Approvals{TTL: ac.TTL, TTLSet: ac.TTL != 0, Store: strings.TrimSpace(ac.Store)}
	if mcpTTL != 0 {
		if a.TTLSet && mcpTTL != ac.TTL {
			return Approvals{}, fmt.Errorf("mcp.approval_ttl: replaced by approvals.ttl, which sets another TTL (%s); remove mcp.approval_ttl", ac.TTL)
		}
		a.TTL, a.TTLSet = mcpTTL, true
		a.Deprecated = append(a.Deprecated, "mcp.approval_ttl is deprecated: it is approvals.ttl, the one approval TTL of gatehost serve and gatehost mcp")
	}
	if !a.TTLSet {
		a.TTL = approval.DefaultTTL
	} else if err := approval.CheckTTL(a.TTL); err != nil {
		return Approvals{}, fmt.Errorf("approvals.ttl: %w", err)
	}
	if a.Store == "" {
		a.Store = ApprovalsMemory
		if st.Postgres() {
			a.Store = ApprovalsPostgres
		}
	}
	switch a.Store {
	case ApprovalsMemory:
	case ApprovalsFile:
		a.Path = rel(ac.Path)
		if a.Path == "" {
			if logPath == "" {
				return Approvals{}, fmt.Errorf("approvals.path: required with approvals.store %s", ApprovalsFile)
			}
			a.Path = filepath.Join(filepath.Dir(logPath), DefaultApprovalsFile)
		}
	case ApprovalsPostgres:
		if !st.Postgres() {
			return Approvals{}, fmt.Errorf("approvals.store: %s needs store.kind %s", ApprovalsPostgres, StorePostgres)
		}
	default:
		return Approvals{}, fmt.Errorf("approvals.store: %q: want %s, %s or %s", ac.Store, ApprovalsMemory, ApprovalsFile, ApprovalsPostgres)
	}
	if ac.Path != "" && a.Store != ApprovalsFile {
		return Approvals{}, fmt.Errorf("approvals.path: applies only to approvals.store %s", ApprovalsFile)
	}
	a.Rule = approval.Rule{Approvers: ac.Approvers, AllowSelf: ac.AllowSelfApproval}
	if err := a.Rule.Check(); err != nil {
		return Approvals{}, fmt.Errorf("approvals.%w", err)
	}
	switch a.Elicitation = strings.TrimSpace(ac.Elicitation); a.Elicitation {
	case "":
		a.Elicitation = ElicitURL
	case ElicitURL, ElicitForm, ElicitNone:
	default:
		return Approvals{}, fmt.Errorf("approvals.elicitation: %q: want %s, %s or %s", ac.Elicitation, ElicitURL, ElicitForm, ElicitNone)
	}
	if ac.MaxPending < 0 {
		return Approvals{}, fmt.Errorf("approvals.max_pending: %d: negative", ac.MaxPending)
	}
	a.MaxPending = ac.MaxPending
	var err error
	if a.Page, err = resolvePage(ac.Page, rel); err != nil {
		return Approvals{}, err
	}
	names := map[string]bool{}
	for i, w := range ac.Webhooks {
		key := fmt.Sprintf("approvals.webhooks[%d]", i)
		switch {
		case strings.TrimSpace(w.Name) == "":
			return Approvals{}, fmt.Errorf("%s.name: required", key)
		case names[w.Name]:
			return Approvals{}, fmt.Errorf("%s.name: %q twice", key, w.Name)
		case w.URL == "":
			return Approvals{}, fmt.Errorf("%s.url: required", key)
		case w.Format != "slack" && w.Format != "json":
			return Approvals{}, fmt.Errorf("%s.format: %q: want slack or json", key, w.Format)
		case w.SecretFile != "" && w.SecretEnv != "":
			return Approvals{}, fmt.Errorf("%s: secret_file and secret_env both set; choose one", key)
		case w.Format == "json" && w.SecretFile == "" && w.SecretEnv == "":
			return Approvals{}, fmt.Errorf("%s: format json needs secret_file or secret_env (the HMAC-SHA256 signing key)", key)
		case w.Timeout < 0:
			return Approvals{}, fmt.Errorf("%s.timeout: negative", key)
		case w.Retries != nil && (*w.Retries < 0 || *w.Retries > 10):
			return Approvals{}, fmt.Errorf("%s.retries: %d: want 0 to 10", key, *w.Retries)
		}
		names[w.Name] = true
		a.Webhooks = append(a.Webhooks, Webhook{Name: w.Name, URL: w.URL, Format: w.Format, SecretFile: rel(w.SecretFile),
			SecretEnv: w.SecretEnv, Timeout: w.Timeout, Retries: w.Retries})
	}
	return a, nil
}

func resolvePage(pc approvalPageConfig, rel func(string) string) (ApprovalPage, error) {
	p := ApprovalPage{URL: strings.TrimSpace(pc.URL), Listen: strings.TrimSpace(pc.Listen),
		ApproverTokenFile: rel(pc.ApproverTokenFile), CookieKeyFile: rel(pc.CookieKeyFile), SessionTTL: pc.SessionTTL}
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return p, fmt.Errorf("approvals.page.url: %q: want an absolute http(s) URL without query or fragment", pc.URL)
		}
	}
	if pc.SessionTTL < 0 || pc.SessionTTL > 7*24*time.Hour {
		return p, fmt.Errorf("approvals.page.session_ttl: %s: want 0 (default) to 168h", pc.SessionTTL)
	}
	if o := pc.OIDC; o != nil {
		switch {
		case o.Issuer == "":
			return p, fmt.Errorf("approvals.page.oidc.issuer: required")
		case o.ClientID == "":
			return p, fmt.Errorf("approvals.page.oidc.client_id: required")
		}
		p.OIDC = &ApprovalPageOIDC{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecretFile: rel(o.ClientSecretFile),
			Scopes: o.Scopes, Claims: o.Claims}
	}
	return p, nil
}
