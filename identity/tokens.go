package identity

import (
	"net/http"

	"github.com/gatehost/gatehost/abi"
)

// TokenLookup returns the name of the static token given (the token-file
// line's name=), and whether it is one. It must compare in constant time.
type TokenLookup func(token string) (name string, ok bool)

// TokenSource authenticates the operator's static bearer tokens (the
// Tokens of a token file, through Names): principal
// {issuer: the source's name, subject: the token's name, method: token}.
// A bearer token that is not one of them is not refused here but left to
// the next source (ErrNoCredential): an opaque token cannot tell whose it
// is; Chain refuses it when no source accepts it.
type TokenSource struct {
	name   string
	lookup TokenLookup
}

// DefaultTokensName is the issuer of a static token's principal when the
// operator names the source nothing else (auth.tokens.name).
const DefaultTokensName = "gatehost-tokens"

// ApproverTokensName is the issuer of the principal an approver token
// signs in as on the approval page (subject: the token's name). No agent
// token source may take it (auth.tokens.name), so that an agent's
// principal is never an approver token's.
const ApproverTokensName = "gatehost-approvers"

// NewTokenSource returns the static-token source named name ("" is
// DefaultTokensName) over lookup.
func NewTokenSource(name string, lookup TokenLookup) *TokenSource {
	if name == "" {
		name = DefaultTokensName
	}
	return &TokenSource{name: name, lookup: lookup}
}

// Authenticate implements Authenticator.
func (t *TokenSource) Authenticate(r *http.Request) (*abi.Principal, error) {
	tok, ok := Bearer(r)
	if !ok {
		return nil, noCredential(abi.MethodToken, "no bearer token")
	}
	name, ok := t.lookup(tok)
	if !ok {
		return nil, noCredential(abi.MethodToken, "not one of the static tokens")
	}
	return bounded(abi.MethodToken, &abi.Principal{Issuer: t.name, Subject: name, Method: abi.MethodToken})
}
