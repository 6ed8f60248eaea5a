package server_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/server"
)

// Tokens is the decision API's bearer check for another front end (the MCP
// gateway): a request without one of the tokens never reaches the handler.
func TestTokensRequire(t *testing.T) {
	t.Setenv(server.TokenEnv, "")
	const good = "agent-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("# agents\n"+good+" name=ci\n"), 0o600))
	toks, err := server.LoadTokens(file)
	require.NoError(t, err)
	require.False(t, toks.Empty())

	reached := 0
	h := toks.Require(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++ }))
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer agent-token-0123456789abcdeX", http.StatusUnauthorized},
		{"not bearer", "Basic " + good, http.StatusUnauthorized},
		{"token without scheme", good, http.StatusUnauthorized},
		{"scheme in any case (RFC 7235 §2.1)", "bearer " + good, http.StatusOK},
		{"good", "Bearer " + good, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tc.want, w.Code)
			if tc.want == http.StatusUnauthorized {
				assert.Equal(t, before, reached, "the handler was not reached")
				assert.Equal(t, `Bearer realm="gatehost"`, w.Header().Get("WWW-Authenticate"))
			} else {
				assert.Equal(t, before+1, reached)
			}
		})
	}
}

func TestTokensNoneConfigured(t *testing.T) {
	t.Setenv(server.TokenEnv, "")
	toks, err := server.LoadTokens("")
	require.NoError(t, err)
	assert.True(t, toks.Empty())
	var nilToks *server.Tokens
	assert.True(t, nilToks.Empty())
	next := http.NotFoundHandler()
	w := httptest.NewRecorder()
	toks.Require(next).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusNotFound, w.Code, "no tokens: every request passes to the caller's loopback-only listener")
}

func TestLoadTokensRefusesBadFile(t *testing.T) {
	t.Setenv(server.TokenEnv, "")
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("short\n"), 0o600))
	_, err := server.LoadTokens(file)
	require.Error(t, err)
	assert.Contains(t, err.Error(), file)
	_, err = server.LoadTokens(filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
}
