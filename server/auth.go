package server

import (
	"context"

	"github.com/gatehost/gatehost/identity"
)

// Environment variables of bearer tokens (identity.TokenEnv,
// identity.ApproverTokenEnv): the token file's grammar is package
// identity's.
const (
	TokenEnv         = identity.TokenEnv
	ApproverTokenEnv = identity.ApproverTokenEnv
)

type credKey struct{}

// withCredential returns ctx carrying the request's credential.
func withCredential(ctx context.Context, c *identity.Credential) context.Context {
	return context.WithValue(ctx, credKey{}, c)
}

// credentialOf returns the credential the request authenticated with; nil
// when auth is off.
func credentialOf(ctx context.Context) *identity.Credential {
	c, _ := ctx.Value(credKey{}).(*identity.Credential)
	return c
}
