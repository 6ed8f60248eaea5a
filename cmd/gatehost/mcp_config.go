package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/internal/safefile"
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

		MaxUpstreamRequestsPerMinute: c.MaxUpstreamRequestsPerMinute,
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
		up := mcpgateway.Upstream{Name: n, Command: u.Command, Env: u.Env, URL: u.URL, Trust: u.Trust,
			Processes: u.Processes, SessionScoped: u.SessionScoped, ProtocolVersion: u.ProtocolVersion}
		if err := upstreamCredentials(n, u, &up); err != nil {
			return o, err
		}
		o.Upstreams = append(o.Upstreams, up)
	}
	return o, nil
}

// maxSecretBytes bounds a secret file.
const maxSecretBytes = 64 << 10

// upstreamCredentials reads the secrets of upstream n's headers and token
// exchange into up, and checks them as the gateway will, naming the key.
// No error holds a secret.
func upstreamCredentials(n string, u config.MCPUpstream, up *mcpgateway.Upstream) error {
	key := "mcp.upstreams." + n
	for _, h := range slices.Sorted(maps.Keys(u.Headers)) {
		ref := u.Headers[h]
		hk := key + ".headers." + h
		if err := mcpgateway.CheckHeaderName(h); err != nil {
			return fmt.Errorf("%s: %w", hk, err)
		}
		v, err := readSecret(hk, "secret_file", ref.SecretFile, "secret_env", ref.SecretEnv)
		if err != nil {
			return err
		}
		hdr := mcpgateway.Header{Name: h, Value: mcpgateway.Secret(ref.Prefix) + v}
		if err := mcpgateway.CheckCredentials(mcpgateway.Upstream{URL: u.URL, Command: u.Command, Headers: []mcpgateway.Header{hdr}}); err != nil {
			return fmt.Errorf("%s: %s", hk, err.(*mcpgateway.OptionsError).Reason)
		}
		up.Headers = append(up.Headers, hdr)
	}
	if x := u.TokenExchange; x != nil {
		tk := key + ".token_exchange"
		secret, err := readSecret(tk, "client_secret_file", x.ClientSecretFile, "client_secret_env", x.ClientSecretEnv)
		if err != nil {
			return err
		}
		up.TokenExchange = &mcpgateway.TokenExchange{TokenEndpoint: x.TokenEndpoint, ClientID: x.ClientID, ClientSecret: secret,
			Audience: x.Audience, Resource: x.Resource, Scopes: x.Scopes, Timeout: x.Timeout}
		if err := mcpgateway.CheckCredentials(mcpgateway.Upstream{URL: u.URL, Command: u.Command, TokenExchange: up.TokenExchange}); err != nil {
			oe := err.(*mcpgateway.OptionsError)
			return fmt.Errorf("%s.%s: %s", key, oe.Field, oe.Reason)
		}
	}
	return nil
}

// readSecret reads a secret from a file (white space around it dropped)
// or an environment variable; key.fileKey or key.envKey names it.
func readSecret(key, fileKey, file, envKey, env string) (mcpgateway.Secret, error) {
	if file != "" {
		b, err := safefile.ReadFile(file, maxSecretBytes)
		if err != nil {
			return "", fmt.Errorf("%s.%s: %w", key, fileKey, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%s.%s: %s is empty", key, fileKey, file)
		}
		return mcpgateway.Secret(v), nil
	}
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return "", fmt.Errorf("%s.%s: $%s is not set", key, envKey, env)
	}
	return mcpgateway.Secret(v), nil
}
