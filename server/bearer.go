package server

import (
	"net/http"
	"os"
	"strings"
)

// Tokens are the agent bearer tokens of --token-file and $GATEHOST_AUTH_TOKENS
// (docs/HTTP-API.md "Security" gives the line format), for another HTTP front
// end of the host, such as the MCP gateway, to authenticate its callers the
// way the decision API does.
type Tokens struct{ set *tokenSet }

// LoadTokens reads the agent tokens of file ("" for none) and of
// $GATEHOST_AUTH_TOKENS. Errors are typed as the server's and name the file
// and line.
func LoadTokens(file string) (*Tokens, error) {
	t, err := loadTokens(file, os.Getenv(TokenEnv))
	if err != nil {
		return nil, err
	}
	return &Tokens{set: t}, nil
}

// Empty reports whether no token is configured: then Require lets every
// request through, and the caller must keep the listener on loopback.
func (t *Tokens) Empty() bool { return t == nil || t.set.empty() }

// Require answers 401 with a Bearer challenge (RFC 6750 §3) to a request
// without one of the tokens, and passes the others to next. With no tokens
// configured it returns next.
func (t *Tokens) Require(next http.Handler) http.Handler {
	if t.Empty() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearerToken(r)
		c := t.set.lookup(tok)
		if !ok || c == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehost"`)
			http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(withCredential(r.Context(), c)))
	})
}

// bearerToken is the token of the request's Authorization: Bearer header.
// The scheme is matched without regard to case (RFC 7235 §2.1; RFC 6750
// §2.1 gives the header's form).
func bearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return tok, true
}
