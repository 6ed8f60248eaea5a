package identity_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/identity/identitytest"
)

// TestRequireLogsRefusals: a refused JWT is answered 401 and logged at
// info level with why (expired, wrong audience, unknown kid, a signature
// that does not verify, another issuer), the issuer and the kid; the
// token is never logged. A request with no credential is logged at debug
// level only.
func TestRequireLogsRefusals(t *testing.T) {
	clk := newClock()
	iss := identitytest.NewIssuer(t)
	o := newOIDC(t, iss, clk, nil)
	key := iss.Keys()[0]
	good := func() identitytest.Claims { return iss.Standard("alice", aud, clk.Now()) }
	with := func(k string, v any) identitytest.Claims { c := good(); c[k] = v; return c }

	for _, tc := range []struct {
		name, token string
		want        []string // in the log line
	}{
		{"expired", identitytest.Sign(t, key, with("exp", clk.Now().Add(-time.Hour).Unix())), []string{"the token has expired"}},
		{"wrong audience", identitytest.Sign(t, key, with("aud", "someone-else")), []string{"not for this audience", "someone-else"}},
		{"unknown kid", identitytest.Sign(t, identitytest.NewRSAKey(t, "rotated-away"), good()), []string{"not valid", "key id", "kid=rotated-away"}},
		{"bad signature", identitytest.Sign(t, identitytest.NewRSAKey(t, key.ID), good()), []string{"not valid", "signature does not verify", "kid=" + key.ID}},
		{"another issuer", identitytest.Sign(t, key, with("iss", "https://evil.example")), []string{"not valid", "issuer=https://evil.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
			reached := false
			h := identity.RequireLogged(o, "gatehost", logger, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, bearerReq(tc.token))
			assert.Equal(t, http.StatusUnauthorized, w.Code)
			assert.False(t, reached)
			line := buf.String()
			require.Contains(t, line, "level=INFO")
			assert.Contains(t, line, "identity: credential refused")
			assert.Contains(t, line, "method=oidc")
			for _, want := range tc.want {
				assert.Contains(t, line, want)
			}
			if tc.name != "another issuer" {
				assert.Contains(t, line, "issuer="+iss.URL)
			}
			assert.NotContains(t, line, tc.token)
			for _, part := range strings.Split(tc.token, ".") {
				assert.NotContains(t, line, part, "no part of the token is logged")
			}
		})
	}

	t.Run("no credential: debug only", func(t *testing.T) {
		var buf bytes.Buffer
		h := identity.RequireLogged(o, "gatehost", slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), http.NotFoundHandler())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
		assert.Equal(t, http.StatusUnauthorized, w.Code)
		assert.Empty(t, buf.String())
		h = identity.RequireLogged(o, "gatehost", slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), http.NotFoundHandler())
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
		assert.Contains(t, buf.String(), "level=DEBUG")
		assert.Contains(t, buf.String(), "identity: no credential")
	})
}
