package identity_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/identity"
)

const (
	tokenA = "tok-A-0123456789abcdef0123456789"
	tokenB = "tok-B-fedcba9876543210fedcba9876"
)

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	cases := []struct {
		name    string
		file    string
		env     string
		n       int
		wantErr string
	}{
		{name: "none", n: 0},
		{name: "file", file: write("ok", "# c\n"+tokenA+"\n  "+tokenB+"  \n"), n: 2},
		{name: "env, commas", env: tokenA + "," + tokenB, n: 2},
		{name: "both", file: write("one", tokenA), env: tokenB, n: 2},
		{name: "short token", env: "short", wantErr: "at least 16"},
		{name: "empty file", file: write("empty", "# nothing\n"), wantErr: "no token"},
		{name: "missing file", file: filepath.Join(dir, "absent"), wantErr: "--token-file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, err := identity.LoadTokens(c.file, c.env)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.n, ts.Len())
			if c.n > 0 {
				assert.True(t, ts.Match(tokenB) || ts.Match(tokenA))
				assert.False(t, ts.Match(""))
			}
		})
	}
}

// TestTokenCompareTimingSafe: a check takes the same time whether a guess
// shares nothing with a token, all but its last byte, or is a different
// length, and whichever token it matches. A byte-by-byte compare that stops
// at the first difference (==, bytes.Equal) fails this: with 4 KiB tokens
// it is tens of times slower on a near miss than on a first-byte miss.
func TestTokenCompareTimingSafe(t *testing.T) {
	long := strings.Repeat("k", 4096)
	set, err := identity.LoadTokens("", long+","+strings.Repeat("j", 4096))
	require.NoError(t, err)
	guesses := map[string]string{
		"first byte wrong": "X" + long[1:],
		"last byte wrong":  long[:4095] + "X",
		"short":            "X",
		"match":            long,
	}
	// The minimum of many rounds is the cost of the code, not of the
	// machine's other load; the guesses take turns within each round, so
	// a change of load (another process, the CPU's clock) reaches them
	// all alike.
	// Hashing a 1-byte guess is cheaper than a 4 KiB one, and that length
	// is the caller's own; what must not vary is the time over guesses of
	// one length.
	times := map[string]time.Duration{}
	for name := range guesses {
		times[name] = time.Duration(1 << 62)
	}
	for range 500 {
		for name, g := range guesses {
			start := time.Now()
			for range 20 {
				set.Match(g)
			}
			times[name] = min(times[name], time.Since(start))
		}
	}
	t.Logf("per 20 checks: %v", times)
	same := []time.Duration{times["first byte wrong"], times["last byte wrong"], times["match"]}
	ratio := float64(slices.Max(same)) / float64(slices.Min(same))
	assert.Less(t, ratio, 2.0, "check time depends on how much of the guess is right: %v", times)
	assert.True(t, set.Match(long))
	assert.False(t, set.Match(guesses["last byte wrong"]))
}

// TestTokenFileFormat: the fields of a token-file line, how an unbound
// token is read, and a typed error naming the line and field for each
// fault, never quoting a token.
func TestTokenFileFormat(t *testing.T) {
	dir := t.TempDir()
	n := 0
	write := func(s string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("tokens-%d", n))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	cases := []struct {
		name      string
		file, env string
		// allowed and refused sessions of the first token
		allows, refuses []string
		tokName         string
		err             error
		line            int
		field           string
	}{
		{name: "bound to sessions", file: tokenA + " sessions=dev,ci name=bot\n" + tokenB + " sessions=ops",
			allows: []string{"", "dev", "ci"}, refuses: []string{"ops", "Dev", "*"}, tokName: "bot"},
		{name: "tabs and repeated ids", file: tokenA + "\tsessions=dev,dev\n" + tokenB + " sessions=ops",
			allows: []string{"dev"}, refuses: []string{"ops"}, tokName: "--token-file line 1"},
		{name: "any session, said explicitly", file: tokenA + " sessions=*\n" + tokenB + " sessions=ops",
			allows: []string{"dev", "ops", "x"}},
		{name: "the only token, unbound: any session", file: tokenA, allows: []string{"dev", "ops"}},
		{name: "the only token, from the environment", env: tokenA, allows: []string{"dev"}, tokName: "$GATEHOST_AUTH_TOKENS item 1"},
		{name: "several unbound: no session", file: tokenA + "\n" + tokenB, allows: []string{""}, refuses: []string{"dev"}},
		{name: "one bound, one unbound from the environment", file: tokenA + " sessions=dev", env: tokenB,
			allows: []string{"dev"}, refuses: []string{"ops"}},
		{name: "unknown field", file: tokenA + " role=admin", err: identity.ErrTokenField, line: 1},
		{name: "a space inside a token", file: "# c\n" + tokenA + " secretpart", err: identity.ErrTokenField, line: 2},
		{name: "sessions twice", file: tokenA + " sessions=a sessions=b", err: identity.ErrTokenField, line: 1, field: "sessions"},
		{name: "empty session id", file: tokenA + " sessions=a,,b", err: identity.ErrTokenField, line: 1, field: "sessions"},
		{name: "no session ids", file: tokenA + " sessions=", err: identity.ErrTokenField, line: 1, field: "sessions"},
		{name: "star among ids", file: tokenA + " sessions=a,*", err: identity.ErrTokenField, line: 1, field: "sessions"},
		{name: "bad name", file: tokenA + " name=a/b", err: identity.ErrTokenField, line: 1, field: "name"},
		{name: "the same token twice", file: tokenA + " sessions=a\n" + tokenA + " sessions=b", err: identity.ErrTokenReused, line: 2, field: "token"},
		{name: "in the file and the environment", file: tokenA, env: tokenA, err: identity.ErrTokenReused, line: 1, field: "token"},
		{name: "short", file: "short sessions=a", err: identity.ErrTokenShort, line: 1, field: "token"},
		{name: "no token", file: "# none\n\n", err: identity.ErrTokenNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := ""
			if c.file != "" {
				file = write(c.file)
			}
			set, err := identity.LoadTokens(file, c.env)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				var te *identity.TokenError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, c.line, te.Line)
				assert.Equal(t, c.field, te.Field)
				assert.NotContains(t, err.Error(), tokenA[6:], "a token is never quoted")
				assert.NotContains(t, err.Error(), "secretpart")
				return
			}
			require.NoError(t, err)
			first := set.Lookup(cmpOr(firstWord(c.file), c.env))
			require.NotNil(t, first)
			for _, s := range c.allows {
				assert.True(t, first.Allows(s), "session %q", s)
			}
			for _, s := range c.refuses {
				assert.False(t, first.Allows(s), "session %q", s)
			}
			if c.tokName != "" {
				assert.Equal(t, c.tokName, first.Name)
			}
		})
	}
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func TestApproverTokens(t *testing.T) {
	dir := t.TempDir()
	agents, err := identity.LoadTokens("", tokenA)
	require.NoError(t, err)
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	set, err := identity.LoadApproverTokens(write("ok", tokenB+" name=alice\n"), "", agents)
	require.NoError(t, err)
	assert.Equal(t, "alice", set.Lookup(tokenB).Name)
	assert.Nil(t, set.Lookup(tokenA), "an agent token is not an approver token")

	_, err = identity.LoadApproverTokens(write("sess", tokenB+" sessions=dev\n"), "", agents)
	assert.ErrorIs(t, err, identity.ErrTokenField, "approvers are not bound to sessions")
	_, err = identity.LoadApproverTokens(write("both", tokenA+"\n"), "", agents)
	require.ErrorIs(t, err, identity.ErrTokenReused, "one credential may not be both")
	assert.NotContains(t, err.Error(), tokenA[6:])
	_, err = identity.LoadApproverTokens("", tokenA, agents)
	assert.ErrorIs(t, err, identity.ErrTokenReused)
	empty, err := identity.LoadApproverTokens("", "", agents)
	require.NoError(t, err)
	assert.True(t, empty.Empty())
}

// FuzzTokenFile: any token-file content loads or fails with a TokenError,
// never panics, and an error never quotes a token.
func FuzzTokenFile(f *testing.F) {
	for _, s := range []string{
		tokenA, tokenA + " sessions=dev,ci name=bot\n" + tokenB + " sessions=*",
		"# c\n\n" + tokenA + "\tsessions=a,,b", tokenA + " x", "short", tokenA + " name=" + tokenB,
		tokenA + " sessions=a sessions=b", "\xff\xfe" + tokenA, tokenA + " sessions=" + strings.Repeat("a", 200),
	} {
		f.Add(s)
	}
	path := filepath.Join(f.TempDir(), "tokens")
	f.Fuzz(func(t *testing.T, s string) {
		require.NoError(t, os.WriteFile(path, []byte(s), 0o600))
		set, err := identity.LoadTokens(path, "")
		if err != nil {
			var te *identity.TokenError
			require.ErrorAs(t, err, &te)
			for _, line := range strings.Split(s, "\n") {
				tok := firstWord(line)
				if len(tok) >= identity.MinTokenBytes && strings.Count(s, tok) == 1 {
					assert.NotContains(t, err.Error(), tok)
				}
			}
			return
		}
		assert.False(t, set.Empty())
	})
}

// Tokens.Require is a front end's bearer check without identity sources: a request without one of the tokens never reaches the handler.
func TestTokensRequire(t *testing.T) {
	t.Setenv(identity.TokenEnv, "")
	const good = "agent-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("# agents\n"+good+" name=ci\n"), 0o600))
	toks, err := identity.LoadTokens(file, "")
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
	t.Setenv(identity.TokenEnv, "")
	toks, err := identity.LoadTokens("", "")
	require.NoError(t, err)
	assert.True(t, toks.Empty())
	var nilToks *identity.Tokens
	assert.True(t, nilToks.Empty())
	next := http.NotFoundHandler()
	w := httptest.NewRecorder()
	toks.Require(next).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusNotFound, w.Code, "no tokens: every request passes to the caller's loopback-only listener")
}

func TestLoadTokensRefusesBadFile(t *testing.T) {
	t.Setenv(identity.TokenEnv, "")
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("short\n"), 0o600))
	_, err := identity.LoadTokens(file, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), file)
	_, err = identity.LoadTokens(filepath.Join(t.TempDir(), "missing"), "")
	require.Error(t, err)
}
