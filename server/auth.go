package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/runecut"
)

// Environment variables of bearer tokens, separated by commas or newlines.
// Each item is a bare token: one from the environment can carry no fields.
const (
	TokenEnv         = "GATEHOST_AUTH_TOKENS"
	ApproverTokenEnv = "GATEHOST_APPROVER_TOKENS"
)

// Sentinels of tokenError, for errors.Is.
var (
	// errTokenNone: a token file holds no token.
	errTokenNone = errors.New("no token")
	// errTokenShort: a token is shorter than minTokenBytes.
	errTokenShort = errors.New("token too short")
	// errTokenField: a field after a token is unknown, repeated or invalid.
	errTokenField = errors.New("invalid token field")
	// errTokenReused: one token appears twice, or as both an agent and an
	// approver token.
	errTokenReused = errors.New("token reused")
)

// tokenError is a bad line of a token file or a bad item of a token
// environment variable. It never holds the token itself.
type tokenError struct {
	// Source is "--token-file PATH", "--approver-token-file PATH" or "$VAR".
	Source string
	// Line is the 1-based line of the file, or the item's position in the
	// variable; 0 when the error is about the whole source.
	Line int
	// Field is "token", "sessions" or "name"; "" for the whole line.
	Field  string
	Reason string
	Err    error
}

func (e *tokenError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Reason)
	return b.String()
}

func (e *tokenError) Unwrap() error { return e.Err }

// credential is one accepted bearer token: its SHA-256, what the server
// calls it in logs and the event log, and the sessions it may act for.
type credential struct {
	sum [sha256.Size]byte
	// name is the line's name= field, or "<source> line N".
	name string
	// anySession: ?session= may name any session (sessions=*, or the only
	// agent token with no sessions= field).
	anySession bool
	// sessions are the session ids it may act for when not anySession;
	// none means it may check only without a session.
	sessions []string
	// bound: the line has a sessions= field.
	bound bool
}

// allows reports whether the credential may act for session id ("" is no
// session, which every credential may use).
func (c *credential) allows(id string) bool {
	return id == "" || c.anySession || slices.Contains(c.sessions, id)
}

// tokenSet holds the accepted bearer tokens of one channel (agents, or
// approvers). Comparing digests of equal length, with
// subtle.ConstantTimeCompare, against every token without stopping at a
// match, makes the time of a check independent of how much of a guess is
// right, of its length, and of which token matched.
type tokenSet struct{ creds []credential }

func (t *tokenSet) empty() bool { return t == nil || len(t.creds) == 0 }

// lookup returns the credential whose token is given, in constant time;
// nil when none.
func (t *tokenSet) lookup(given string) *credential {
	if t == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(given))
	found := -1
	for i := range t.creds {
		eq := subtle.ConstantTimeCompare(sum[:], t.creds[i].sum[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil
	}
	return &t.creds[found]
}

// match reports whether given is one of the tokens, in constant time.
func (t *tokenSet) match(given string) bool { return t.lookup(given) != nil }

// unbound returns the names of credentials without a sessions= field.
func (t *tokenSet) unbound() []string {
	var out []string
	for _, c := range t.credsOrNil() {
		if !c.bound {
			out = append(out, c.name)
		}
	}
	return out
}

func (t *tokenSet) credsOrNil() []credential {
	if t == nil {
		return nil
	}
	return t.creds
}

// tokenNameRE is a name= value: what the event log records as the agent
// or approver.
var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9_.@:-]{1,64}$`)

// loadTokens reads the agent tokens from file and from env (see
// parseTokens for the line format). A line without sessions= may act for
// any session when it is the only agent token (with one credential there
// is no other caller whose session it could take), and for none when
// there are more: a multi-token server must say which sessions each token
// is for.
func loadTokens(file, env string) (*tokenSet, error) {
	t, err := parseTokens("--token-file", file, TokenEnv, env, true)
	if err != nil {
		return nil, err
	}
	if len(t.creds) == 1 && !t.creds[0].bound {
		t.creds[0].anySession = true
	}
	return t, nil
}

// loadApproverTokens reads the approver tokens, the credentials of
// POST /v1/approvals, from file and env: lines of TOKEN [name=NAME]. No
// token may also be an agent token: the channel a person confirms through
// must be one the agent's credential cannot use.
func loadApproverTokens(file, env string, agents *tokenSet) (*tokenSet, error) {
	t, err := parseTokens("--approver-token-file", file, ApproverTokenEnv, env, false)
	if err != nil {
		return nil, err
	}
	for _, c := range t.creds {
		for _, a := range agents.credsOrNil() {
			if c.sum == a.sum {
				return nil, &tokenError{Source: "approver token " + c.name, Field: "token", Err: errTokenReused,
					Reason: "is also an agent token (" + a.name + "); approvals need a credential of their own"}
			}
		}
	}
	return t, nil
}

// parseTokens reads tokens from file and from env. A file line is
//
//	TOKEN [sessions=ID[,ID...]|sessions=*] [name=NAME]
//
// fields separated by spaces or tabs; blank lines and lines starting with
// # are ignored. sessions= (agent files only) lists the session ids,
// [A-Za-z0-9_.:-]{1,128}, that ?session= may name with this token; *
// means any. name= labels the token in logs and the event log. Items of
// env, separated by commas or newlines, are bare tokens. A token shorter
// than 16 bytes is refused: it could be guessed.
func parseTokens(flag, file, envName, env string, agent bool) (*tokenSet, error) {
	t := &tokenSet{}
	add := func(src string, line int, tok string, c credential) error {
		if len(tok) < minTokenBytes {
			return &tokenError{Source: src, Line: line, Field: "token", Err: errTokenShort,
				Reason: fmt.Sprintf("%d bytes; at least %d are required", len(tok), minTokenBytes)}
		}
		c.sum = sha256.Sum256([]byte(tok))
		for _, o := range t.creds {
			if o.sum == c.sum {
				return &tokenError{Source: src, Line: line, Field: "token", Err: errTokenReused,
					Reason: "the same token as " + o.name + "; each token must appear once"}
			}
		}
		t.creds = append(t.creds, c)
		return nil
	}
	if file != "" {
		src := flag + " " + file
		b, err := readTokenFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			fields := strings.Fields(line)
			c, err := parseTokenFields(src, i+1, fields[1:], agent)
			if err != nil {
				return nil, err
			}
			if c.name == "" {
				c.name = fmt.Sprintf("%s line %d", flag, i+1)
			}
			if err := add(src, i+1, fields[0], c); err != nil {
				return nil, err
			}
		}
		if len(t.creds) == 0 {
			return nil, &tokenError{Source: src, Err: errTokenNone, Reason: "no token in it"}
		}
	}
	n := 0
	for _, tok := range strings.FieldsFunc(env, func(r rune) bool { return r == ',' || r == '\n' }) {
		if tok = strings.TrimSpace(tok); tok != "" {
			n++
			if err := add("$"+envName, n, tok, credential{name: fmt.Sprintf("$%s item %d", envName, n)}); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// parseTokenFields reads the fields after a token.
func parseTokenFields(src string, line int, fields []string, agent bool) (credential, error) {
	var c credential
	bad := func(field, format string, args ...any) error {
		return &tokenError{Source: src, Line: line, Field: field, Err: errTokenField, Reason: fmt.Sprintf(format, args...)}
	}
	seen := map[string]bool{}
	for i, f := range fields {
		key, val, ok := strings.Cut(f, "=")
		if !ok || (key != "sessions" && key != "name") {
			// Not quoted: it may be the rest of a token with a space in it.
			return c, bad("", "word %d after the token is not sessions=ID,... or name=NAME (a token cannot contain spaces)", i+1)
		}
		if seen[key] {
			return c, bad(key, "given twice")
		}
		seen[key] = true
		switch key {
		case "name":
			if !tokenNameRE.MatchString(val) {
				return c, bad("name", "%q: want 1 to 64 of A-Z a-z 0-9 _ . @ : -", cut(val, 40))
			}
			c.name = val
		case "sessions":
			if !agent {
				return c, bad("sessions", "approver tokens are not bound to sessions; an approval names its session")
			}
			c.bound = true
			if val == "*" {
				c.anySession = true
				continue
			}
			for _, id := range strings.Split(val, ",") {
				if !session.ValidID(id) {
					return c, bad("sessions", "%q is not a session id (want 1 to %d bytes of A-Z a-z 0-9 _ . : -, or * alone for any)", cut(id, 40), session.MaxIDBytes)
				}
				if !slices.Contains(c.sessions, id) {
					c.sessions = append(c.sessions, id)
				}
			}
		}
	}
	return c, nil
}

// cut shortens s for an error message, on a rune boundary.
func cut(s string, n int) string { return runecut.Cut(s, n, "...") }

type credKey struct{}

// withCredential returns ctx carrying the request's credential.
func withCredential(ctx context.Context, c *credential) context.Context {
	return context.WithValue(ctx, credKey{}, c)
}

// credentialOf returns the credential the request authenticated with; nil
// when auth is off.
func credentialOf(ctx context.Context) *credential {
	c, _ := ctx.Value(credKey{}).(*credential)
	return c
}
