package config

import "time"

// MCP is the mcp: section of a config file, read by gatehost mcp (README
// "Put gatehost in front of an MCP server"). Values are checked where they
// are used: mcpgateway.Options names a bad one.
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
	CallTimeout    time.Duration `mapstructure:"call_timeout"`
	ApprovalTTL    time.Duration `mapstructure:"approval_ttl"`
	MaxResultBytes byteSize      `mapstructure:"max_result_bytes"`
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
