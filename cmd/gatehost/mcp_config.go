package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/mcpgateway"
)

// gatewayOptions converts the section; upstreams are ordered by name. The
// library checks the values (mcpgateway.OptionsError names the field).
func gatewayOptions(c config.MCP) (mcpgateway.Options, error) {
	o := mcpgateway.Options{
		Pipeline:                strings.ToLower(c.Pipeline),
		CoreTools:               c.Sessions.Core,
		ActivateOnList:          c.Sessions.ActivateOnList,
		ListSessionToolsOnly:    c.Sessions.ListSessionToolsOnly,
		CallTimeout:             c.CallTimeout,
		MaxResultBytes:          int(min(c.MaxResultBytes, 1<<40)),
		RequireApproval:         c.Baseline.RequireApproval,
		MaxSessions:             c.MaxSessions,
		MaxSessionsPerPrincipal: c.MaxSessionsPerPrincipal,
		SessionIdleTimeout:      c.SessionIdleTimeout,
		ConnectTimeout:          c.ConnectTimeout,
		MaxListPages:            c.MaxListPages,
		MaxListItems:            c.MaxListItems,
		MaxListBytes:            int(min(c.MaxListBytes, 1<<40)),
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
