package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/mcpgateway"
)

// mcpFileConfig is the mcp: section of gatehost.yaml, read by gatehost mcp
// (README "Put gatehost in front of an MCP server").
type mcpFileConfig struct {
	// Pipeline is the tool_call pipeline every tools/call runs, unless
	// --pipeline names another.
	Pipeline  string                       `mapstructure:"pipeline"`
	Upstreams map[string]mcpUpstreamConfig `mapstructure:"upstreams"`
	Sessions  struct {
		Core                 []string `mapstructure:"core"`
		ActivateOnList       []string `mapstructure:"activate_on_list"`
		ListSessionToolsOnly bool     `mapstructure:"list_session_tools_only"`
	} `mapstructure:"sessions"`
	CallTimeout    time.Duration `mapstructure:"call_timeout"`
	ApprovalTTL    time.Duration `mapstructure:"approval_ttl"`
	MaxResultBytes byteSize      `mapstructure:"max_result_bytes"`
}

type mcpUpstreamConfig struct {
	Command []string `mapstructure:"command"`
	// Env is a list of KEY=VALUE: a map's keys would be lower-cased by
	// the config loader, and variable names are case-sensitive.
	Env   []string `mapstructure:"env"`
	URL   string   `mapstructure:"url"`
	Trust string   `mapstructure:"trust"`
}

// gatewayOptions converts the section; upstreams are ordered by name. The
// library checks the values (mcpgateway.OptionsError names the field).
func (c mcpFileConfig) gatewayOptions() (mcpgateway.Options, error) {
	o := mcpgateway.Options{
		Pipeline:             strings.ToLower(c.Pipeline),
		CoreTools:            c.Sessions.Core,
		ActivateOnList:       c.Sessions.ActivateOnList,
		ListSessionToolsOnly: c.Sessions.ListSessionToolsOnly,
		CallTimeout:          c.CallTimeout,
		ApprovalTTL:          c.ApprovalTTL,
		MaxResultBytes:       int(min(c.MaxResultBytes, 1<<40)),
	}
	names := make([]string, 0, len(c.Upstreams))
	for n := range c.Upstreams {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		u := c.Upstreams[n]
		for i, kv := range u.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return o, fmt.Errorf("mcp.upstreams.%s.env[%d]: want KEY=VALUE", n, i)
			}
		}
		o.Upstreams = append(o.Upstreams, mcpgateway.Upstream{Name: n, Command: u.Command, Env: u.Env, URL: u.URL, Trust: u.Trust})
	}
	return o, nil
}
