package identity

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/runecut"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Environment variables of bearer tokens, separated by commas or newlines.
// Each item is a bare token: one from the environment can carry no fields.
const (
	TokenEnv         = "GATEHOST_AUTH_TOKENS"
	ApproverTokenEnv = "GATEHOST_APPROVER_TOKENS"
)

const (
	// MinTokenBytes is the shortest token accepted: a shorter one could
	// be guessed.
	MinTokenBytes = 16
	// MaxTokenFileBytes caps a token file (--token-file,
	// --approver-token-file).
	MaxTokenFileBytes = 1 << 20
)

// Sentinels of TokenError, for errors.Is.
var (
	// ErrTokenNone: a token file holds no token.
	ErrTokenNone = errors.New("no token")
	// ErrTokenShort: a token is shorter than MinTokenBytes.
	ErrTokenShort = errors.New("token too short")
	// ErrTokenField: a field after a token is unknown, repeated or invalid.
	ErrTokenField = errors.New("invalid token field")
	// ErrTokenReused: one token appears twice, or as both an agent and an
	// approver token.
	ErrTokenReused = errors.New("token reused")
)

// TokenError is a bad line of a token file or a bad item of a token
// environment variable. It never holds the token itself.
type TokenError struct {
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

func (e *TokenError) Error() string {
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

func (e *TokenError) Unwrap() error { return e.Err }

// Credential is one accepted bearer token: its SHA-256, what logs and the
// event log call it, and the sessions it may act for.
type Credential struct {
	sum [sha256.Size]byte
	// Name is the line's name= field, or "<source> line N".
	Name string
	// AnySession: ?session= may name any session (sessions=*, or the only
	// agent token with no sessions= field).
	AnySession bool
	// Sessions are the session ids it may act for when not AnySession;
	// none means it may check only without a session.
	Sessions []string
	// Bound: the line has a sessions= field.
	Bound bool
}

// Allows reports whether the credential may act for session id ("" is no
// session, which every credential may use).
func (c *Credential) Allows(id string) bool {
	return id == "" || c.AnySession || slices.Contains(c.Sessions, id)
}

// Fingerprint names c's token without revealing it: a digest of the
// token's SHA-256 under a label of its own, so that a sign-in can carry it
// and be checked again (Tokens.ByFingerprint) against the tokens loaded
// then, and a token replaced under the same name no longer matches.
func (c *Credential) Fingerprint() string {
	sum := sha256.Sum256(append([]byte("gatehost credential fingerprint\x00"), c.sum[:]...))
	return hex.EncodeToString(sum[:16])
}

// ByFingerprint returns the credential whose Fingerprint is fp, in
// constant time; nil when none.
func (t *Tokens) ByFingerprint(fp string) *Credential {
	found := -1
	for i := range t.list() {
		eq := subtle.ConstantTimeCompare([]byte(fp), []byte(t.creds[i].Fingerprint()))
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil
	}
	return &t.creds[found]
}

// Tokens are the accepted bearer tokens of one channel (agents, or
// approvers), read from a token file and an environment variable
// (LoadTokens, LoadApproverTokens). Comparing digests of equal length,
// with subtle.ConstantTimeCompare, against every token without stopping
// at a match, makes the time of a check independent of how much of a
// guess is right, of its length, and of which token matched. A nil
// *Tokens holds none.
type Tokens struct{ creds []Credential }

// Empty reports whether no token is configured.
func (t *Tokens) Empty() bool { return t == nil || len(t.creds) == 0 }

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.list()) }

// Lookup returns the credential whose token is given, in constant time;
// nil when none.
func (t *Tokens) Lookup(given string) *Credential {
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

// Match reports whether given is one of the tokens, in constant time.
func (t *Tokens) Match(given string) bool { return t.Lookup(given) != nil }

// TokenNames returns the tokens' names (name=), sorted, each once.
func (t *Tokens) TokenNames() []string {
	var out []string
	for _, c := range t.list() {
		if !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Unbound returns the names of credentials without a sessions= field.
func (t *Tokens) Unbound() []string {
	var out []string
	for _, c := range t.list() {
		if !c.Bound {
			out = append(out, c.Name)
		}
	}
	return out
}

func (t *Tokens) list() []Credential {
	if t == nil {
		return nil
	}
	return t.creds
}

// Names is the TokenLookup of the tokens current at each call of current:
// the source Chain asks, when a reload may swap the tokens.
func Names(current func() *Tokens) TokenLookup {
	return func(tok string) (string, bool) {
		if c := current().Lookup(tok); c != nil {
			return c.Name, true
		}
		return "", false
	}
}

// Require answers 401 with a Bearer challenge (RFC 6750 §3) to a request
// without one of the tokens, and passes the others to next. With no tokens
// configured it returns next: the caller must keep the listener on
// loopback.
func (t *Tokens) Require(next http.Handler) http.Handler {
	if t.Empty() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := Bearer(r)
		if !ok || t.Lookup(tok) == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehost"`)
			http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenNameRE is a name= value: what the event log records as the agent
// or approver.
var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9_.@:-]{1,64}$`)

// LoadTokens reads the agent tokens from file ("" for none) and from env,
// the value of $GATEHOST_AUTH_TOKENS (see parseTokens for the line
// format). A line without sessions= may act for any session when it is
// the only agent token (with one credential there is no other caller
// whose session it could take), and for none when there are more: a
// multi-token front end must say which sessions each token is for.
// Errors are *TokenError naming the file and line, or the file's read
// error.
func LoadTokens(file, env string) (*Tokens, error) {
	t, err := parseTokens("--token-file", file, TokenEnv, env, true)
	if err != nil {
		return nil, err
	}
	if len(t.creds) == 1 && !t.creds[0].Bound {
		t.creds[0].AnySession = true
	}
	return t, nil
}

// LoadApproverTokens reads the approver tokens, the credentials of
// POST /v1/approvals, from file and env ($GATEHOST_APPROVER_TOKENS):
// lines of TOKEN [name=NAME]. No token may also be one of agents: the
// channel a person confirms through must be one the agent's credential
// cannot use.
func LoadApproverTokens(file, env string, agents *Tokens) (*Tokens, error) {
	t, err := parseTokens("--approver-token-file", file, ApproverTokenEnv, env, false)
	if err != nil {
		return nil, err
	}
	for _, c := range t.creds {
		for _, a := range agents.list() {
			if c.sum == a.sum {
				return nil, &TokenError{Source: "approver token " + c.Name, Field: "token", Err: ErrTokenReused,
					Reason: "is also an agent token (" + a.Name + "); approvals need a credential of their own"}
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
// than MinTokenBytes is refused: it could be guessed.
func parseTokens(flag, file, envName, env string, agent bool) (*Tokens, error) {
	t := &Tokens{}
	add := func(src string, line int, tok string, c Credential) error {
		if len(tok) < MinTokenBytes {
			return &TokenError{Source: src, Line: line, Field: "token", Err: ErrTokenShort,
				Reason: fmt.Sprintf("%d bytes; at least %d are required", len(tok), MinTokenBytes)}
		}
		c.sum = sha256.Sum256([]byte(tok))
		for _, o := range t.creds {
			if o.sum == c.sum {
				return &TokenError{Source: src, Line: line, Field: "token", Err: ErrTokenReused,
					Reason: "the same token as " + o.Name + "; each token must appear once"}
			}
		}
		t.creds = append(t.creds, c)
		return nil
	}
	if file != "" {
		src := flag + " " + file
		b, err := safefile.ReadFile(file, MaxTokenFileBytes)
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
			if c.Name == "" {
				c.Name = fmt.Sprintf("%s line %d", flag, i+1)
			}
			if err := add(src, i+1, fields[0], c); err != nil {
				return nil, err
			}
		}
		if len(t.creds) == 0 {
			return nil, &TokenError{Source: src, Err: ErrTokenNone, Reason: "no token in it"}
		}
	}
	n := 0
	for _, tok := range strings.FieldsFunc(env, func(r rune) bool { return r == ',' || r == '\n' }) {
		if tok = strings.TrimSpace(tok); tok != "" {
			n++
			if err := add("$"+envName, n, tok, Credential{Name: fmt.Sprintf("$%s item %d", envName, n)}); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// parseTokenFields reads the fields after a token.
func parseTokenFields(src string, line int, fields []string, agent bool) (Credential, error) {
	var c Credential
	bad := func(field, format string, args ...any) error {
		return &TokenError{Source: src, Line: line, Field: field, Err: ErrTokenField, Reason: fmt.Sprintf(format, args...)}
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
				return c, bad("name", "%q: want 1 to 64 of A-Z a-z 0-9 _ . @ : -", runecut.Cut(val, 40, "..."))
			}
			c.Name = val
		case "sessions":
			if !agent {
				return c, bad("sessions", "approver tokens are not bound to sessions; an approval names its session")
			}
			c.Bound = true
			if val == "*" {
				c.AnySession = true
				continue
			}
			for _, id := range strings.Split(val, ",") {
				if !session.ValidID(id) {
					return c, bad("sessions", "%q is not a session id (want 1 to %d bytes of A-Z a-z 0-9 _ . : -, or * alone for any)", runecut.Cut(id, 40, "..."), session.MaxIDBytes)
				}
				if !slices.Contains(c.Sessions, id) {
					c.Sessions = append(c.Sessions, id)
				}
			}
		}
	}
	return c, nil
}
