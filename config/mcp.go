package config

import "time"

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
}
