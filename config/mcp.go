package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// MCP is the mcp: section of a config file, read by gatehost mcp
// (docs/MCP-GATEWAY.md "The mcp: section"). Values are checked where they are
// used: mcpgateway.Options names a bad one.
type MCP struct {
	// Pipeline is the tool_call pipeline every tools/call runs, unless
	// the command names another.
	Pipeline  string                 `mapstructure:"pipeline"`
	Upstreams map[string]MCPUpstream `mapstructure:"upstreams"`
	Sessions  struct {
		Core                 []string `mapstructure:"core"`
		ActivateOnList       []string `mapstructure:"activate_on_list"`
		ListSessionToolsOnly bool     `mapstructure:"list_session_tools_only"`
	} `mapstructure:"sessions"`
	CallTimeout time.Duration `mapstructure:"call_timeout"`
	// ApprovalTTL is deprecated: approvals.ttl (Loaded.Approvals.TTL),
	// which it sets when approvals.ttl does not.
	ApprovalTTL    time.Duration `mapstructure:"approval_ttl"`
	MaxResultBytes byteSize      `mapstructure:"max_result_bytes"`
	// Baseline is where the trust baseline lives: a lock file (Path,
	// relative to the config file), shared by every gateway process on
	// the host. RequireApproval: only an operator's approval (gatehost mcp
	// approve) adds a tool; otherwise the first listing of a tool that
	// sessions.core or sessions.activate_on_list names adds it.
	Baseline struct {
		Path            string `mapstructure:"path"`
		RequireApproval bool   `mapstructure:"require_approval"`
	} `mapstructure:"baseline"`
	// Caps and bounds of the edge; zero takes mcpgateway's defaults.
	MaxSessions             int           `mapstructure:"max_sessions"`
	MaxSessionsPerPrincipal int           `mapstructure:"max_sessions_per_principal"`
	SessionIdleTimeout      time.Duration `mapstructure:"session_idle_timeout"`
	ConnectTimeout          time.Duration `mapstructure:"connect_timeout"`
	MaxListPages            int           `mapstructure:"max_list_pages"`
	MaxListItems            int           `mapstructure:"max_list_items"`
	MaxListBytes            byteSize      `mapstructure:"max_list_bytes"`
	// MaxUpstreamRequestsPerMinute bounds what one upstream asks of one
	// caller's client (roots, sampling, elicitation) per minute.
	MaxUpstreamRequestsPerMinute int `mapstructure:"max_upstream_requests_per_minute"`
}

// MCPUpstream is one upstream MCP server: a command gatehost spawns (stdio)
// or a Streamable HTTP URL.
type MCPUpstream struct {
	Command []string `mapstructure:"command"`
	// Env is a list of KEY=VALUE: a map's keys would be lower-cased by
	// the config loader, and variable names are case-sensitive.
	Env   []string `mapstructure:"env"`
	URL   string   `mapstructure:"url"`
	Trust string   `mapstructure:"trust"`
	// Processes bounds a command upstream's processes, shared by every
	// session (default 1, at most 64); SessionScoped instead starts one
	// per session, for servers that keep per-session state. A url
	// upstream takes neither: it is one session per downstream session.
	Processes     int  `mapstructure:"processes"`
	SessionScoped bool `mapstructure:"session_scoped"`
	// Headers are set on every request to a url upstream, each from a
	// secret. The loader folds the names to lower case; HTTP header names
	// are case-insensitive.
	Headers map[string]MCPSecretRef `mapstructure:"headers"`
	// TokenExchange sends each caller's calls to a url upstream with a
	// token exchanged for the caller's own (RFC 8693).
	TokenExchange *MCPTokenExchange `mapstructure:"token_exchange"`
	// ProtocolVersion is the MCP revision asked of the upstream: "" (the
	// newest with sessions) or "2026-07-28" (mcpgateway.Upstream).
	ProtocolVersion string `mapstructure:"protocol_version"`
}

// MCPSecretRef names where a secret is read, at start: a file (resolved
// against the config file's directory; surrounding white space dropped)
// or an environment variable. Prefix goes before the value ("Bearer ").
type MCPSecretRef struct {
	SecretFile string `mapstructure:"secret_file"`
	SecretEnv  string `mapstructure:"secret_env"`
	Prefix     string `mapstructure:"prefix"`
}

// MCPTokenExchange is mcp.upstreams.NAME.token_exchange.
type MCPTokenExchange struct {
	TokenEndpoint    string   `mapstructure:"token_endpoint"`
	ClientID         string   `mapstructure:"client_id"`
	ClientSecretFile string   `mapstructure:"client_secret_file"`
	ClientSecretEnv  string   `mapstructure:"client_secret_env"`
	Audience         string   `mapstructure:"audience"`
	Resource         string   `mapstructure:"resource"`
	Scopes           []string `mapstructure:"scopes"`
	// SubjectToken is what is exchanged: "principal" (the default), the
	// bearer token the caller presented to gatehost mcp --listen.
	SubjectToken string        `mapstructure:"subject_token"`
	Timeout      time.Duration `mapstructure:"timeout"`
}

// MaxMCPProcesses bounds mcp.upstreams.NAME.processes (the gateway's
// mcpgateway.MaxProcesses).
const MaxMCPProcesses = 64

// SubjectPrincipal is token_exchange.subject_token's one value.
const SubjectPrincipal = "principal"

// resolveMCPCredentials checks the upstreams' headers and token_exchange
// and resolves their secret files against the config's directory. What
// only the gateway knows (header names it refuses, the endpoint's URL) it
// checks itself.
func resolveMCPCredentials(m *MCP, rel func(string) string) error {
	for _, name := range slices.Sorted(maps.Keys(m.Upstreams)) {
		u := m.Upstreams[name]
		key := "mcp.upstreams." + name
		switch {
		case u.Processes < 0 || u.Processes > MaxMCPProcesses:
			return fmt.Errorf("%s.processes: %d is not 1 to %d", key, u.Processes, MaxMCPProcesses)
		case u.Processes > 0 && len(u.Command) == 0:
			return fmt.Errorf("%s.processes: only a command upstream takes processes (a url upstream has one session per downstream session)", key)
		case u.Processes > 0 && u.SessionScoped:
			return fmt.Errorf("%s.processes: a session_scoped upstream has one process per session; remove one", key)
		case u.SessionScoped && len(u.Command) == 0:
			return fmt.Errorf("%s.session_scoped: only a command upstream takes session_scoped (a url upstream is always per session)", key)
		}
		if len(u.Command) > 0 {
			if len(u.Headers) > 0 {
				return fmt.Errorf("%s.headers: only a url upstream takes headers (a command upstream takes env)", key)
			}
			if u.TokenExchange != nil {
				return fmt.Errorf("%s.token_exchange: only a url upstream takes token_exchange", key)
			}
		}
		if len(u.Headers) > 0 {
			hs := make(map[string]MCPSecretRef, len(u.Headers))
			for _, h := range slices.Sorted(maps.Keys(u.Headers)) {
				ref := u.Headers[h]
				if err := ref.check(key + ".headers." + h); err != nil {
					return err
				}
				if strings.EqualFold(h, "authorization") && u.TokenExchange != nil {
					return fmt.Errorf("%s.headers.%s: token_exchange sets Authorization; remove one", key, h)
				}
				ref.SecretFile = rel(ref.SecretFile)
				hs[h] = ref
			}
			u.Headers = hs
		}
		if x := u.TokenExchange; x != nil {
			tk := key + ".token_exchange"
			c := *x
			switch {
			case c.TokenEndpoint == "":
				return fmt.Errorf("%s.token_endpoint: required", tk)
			case c.ClientID == "":
				return fmt.Errorf("%s.client_id: required", tk)
			case c.ClientSecretFile != "" && c.ClientSecretEnv != "":
				return fmt.Errorf("%s: client_secret_file and client_secret_env both set; choose one", tk)
			case c.ClientSecretFile == "" && c.ClientSecretEnv == "":
				return fmt.Errorf("%s: client_secret_file or client_secret_env is required", tk)
			case c.SubjectToken != "" && c.SubjectToken != SubjectPrincipal:
				return fmt.Errorf("%s.subject_token: %q: want %s (the caller's own bearer token)", tk, c.SubjectToken, SubjectPrincipal)
			case c.Timeout < 0:
				return fmt.Errorf("%s.timeout: negative", tk)
			}
			c.SubjectToken = SubjectPrincipal
			c.ClientSecretFile = rel(c.ClientSecretFile)
			u.TokenExchange = &c
		}
		m.Upstreams[name] = u
	}
	return nil
}

func (r MCPSecretRef) check(key string) error {
	switch {
	case r.SecretFile != "" && r.SecretEnv != "":
		return fmt.Errorf("%s: secret_file and secret_env both set; choose one", key)
	case r.SecretFile == "" && r.SecretEnv == "":
		return fmt.Errorf("%s: secret_file or secret_env is required (a header's value is a secret, never written in the config)", key)
	}
	return nil
}
