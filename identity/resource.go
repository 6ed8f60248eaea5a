package identity

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// WellKnownResource is the well-known path of OAuth 2.0 protected resource
// metadata (RFC 9728 §3).
const WellKnownResource = "/.well-known/oauth-protected-resource"

// Resource is a front end as an OAuth 2.0 protected resource (RFC 9728),
// the way the MCP authorization spec (2025-11-25) wants an MCP server to
// be: it publishes its metadata, names it in every Bearer challenge, and
// accepts only tokens issued for it (RFC 8707: its URI in their aud).
type Resource struct {
	// URI is the canonical resource URI (auth.resource.uri): the URL
	// clients connect to, such as https://gate.example.com/mcp.
	URI string
	// AuthorizationServers are the issuers clients get tokens from
	// (auth.resource.authorization_servers).
	AuthorizationServers []string
	// ScopesSupported are the scopes the metadata lists.
	ScopesSupported []string
	// Scopes are the scopes a token needs (every one of them); a token
	// without them is refused with 403 insufficient_scope.
	Scopes []string
}

// CheckResourceURI refuses what RFC 8707 §2 and RFC 9728 §1.2 do not allow
// as a resource URI: not absolute, a fragment, a query; and http on
// anything but a loopback address.
func CheckResourceURI(s string) error {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return fmt.Errorf("required")
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "#"):
		return fmt.Errorf("%q is not an absolute URL without user, query or fragment", s)
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return fmt.Errorf("%q: http only on a loopback address; use https", s)
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q: want an https URL", s)
	}
	return nil
}

// CheckScope refuses what RFC 6749 §3.3 does not allow as a scope token.
func CheckScope(s string) error {
	if s == "" {
		return fmt.Errorf("an empty scope")
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
			return fmt.Errorf("%q: a scope is printable ASCII without space, \" or \\", s)
		}
	}
	return nil
}

// MetadataPath is the path of the resource's metadata in the path-suffixed
// form of RFC 9728 §3.1: the well-known path, then the URI's path (no
// terminating slash), e.g. /.well-known/oauth-protected-resource/mcp.
func (r *Resource) MetadataPath() string {
	u, _ := url.Parse(r.URI)
	return WellKnownResource + strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataURL is the absolute URL of the metadata (RFC 9728 §3.1), which
// challenges name in resource_metadata.
func (r *Resource) MetadataURL() string {
	u, _ := url.Parse(r.URI)
	return u.Scheme + "://" + u.Host + r.MetadataPath()
}

// Metadata is the resource's metadata document (RFC 9728 §2): the bearer
// token goes in the Authorization header, nowhere else.
func (r *Resource) Metadata() map[string]any {
	m := map[string]any{
		"resource":                 r.URI,
		"authorization_servers":    r.AuthorizationServers,
		"bearer_methods_supported": []string{"header"},
	}
	if len(r.ScopesSupported) > 0 {
		m["scopes_supported"] = r.ScopesSupported
	}
	return m
}

// MetadataHandler serves Metadata as JSON. It takes no credential: a
// client reads it to learn where to get one. Any origin may read it (a
// browser-based client discovers from another origin).
func (r *Resource) MetadataHandler() http.Handler {
	b, _ := json.Marshal(r.Metadata())
	b = append(b, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_, _ = w.Write(b)
	})
}

// hasScopes reports whether granted, the token's scopes, hold every one of
// need.
func hasScopes(granted, need []string) bool {
	for _, s := range need {
		if !slices.Contains(granted, s) {
			return false
		}
	}
	return true
}
