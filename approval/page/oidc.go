package page

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gatehost/gatehost/abi"
)

type oidcFlow struct {
	cfg      OIDC
	client   *http.Client
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    oauth2.Config
}

func newOIDC(ctx context.Context, c OIDC, prefix string) (*oidcFlow, error) {
	switch {
	case c.Issuer == "":
		return nil, errors.New("approval page: oidc: no issuer")
	case c.ClientID == "":
		return nil, errors.New("approval page: oidc: no client id")
	}
	u, err := url.Parse(c.RedirectURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != prefix+"/callback" {
		return nil, fmt.Errorf("approval page: oidc: redirect URL %q: want the absolute URL of %s/callback", c.RedirectURL, prefix)
	}
	client := c.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), c.Issuer)
	if err != nil {
		return nil, fmt.Errorf("approval page: oidc: discovery of %s: %w", c.Issuer, err)
	}
	scopes := c.Scopes
	if scopes == nil {
		scopes = []string{"profile", "email"}
	}
	if !slices.Contains(scopes, oidc.ScopeOpenID) {
		scopes = append([]string{oidc.ScopeOpenID}, scopes...)
	}
	return &oidcFlow{cfg: c, client: client, provider: p,
		verifier: p.Verifier(&oidc.Config{ClientID: c.ClientID}),
		oauth: oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, Endpoint: p.Endpoint(),
			RedirectURL: c.RedirectURL, Scopes: scopes}}, nil
}

// signinOIDC sends the browser to the provider with a new state, nonce
// and PKCE verifier, kept in the signed flow cookie. It is a GET (a link),
// since the CSP's form-action would stop a form redirected to another
// origin; starting a sign-in changes nothing here.
func (h *handler) signinOIDC(w http.ResponseWriter, r *http.Request) {
	if h.oidc == nil {
		h.fail(w, r, nil, http.StatusNotFound, "Not found", "OpenID Connect sign-in is not configured.")
		return
	}
	f := flow{State: randomHex(16), Nonce: randomHex(16), Verifier: oauth2.GenerateVerifier(),
		Next: h.next(r.URL.Query().Get("next")), Exp: h.o.Now().Add(flowTTL).Unix()}
	_ = h.cookie.set(w, flowCookie, f, flowTTL) // a flow of fixed-size strings always fits
	http.Redirect(w, r, h.oidc.oauth.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusSeeOther)
}

// callback ends the flow: the state matches the flow cookie's, the code
// is exchanged with the PKCE verifier, the ID token is verified (issuer,
// audience, expiry, signature) and carries the flow's nonce.
func (h *handler) callback(w http.ResponseWriter, r *http.Request) {
	if h.oidc == nil {
		h.fail(w, r, nil, http.StatusNotFound, "Not found", "OpenID Connect sign-in is not configured.")
		return
	}
	q := r.URL.Query()
	f := h.cookie.flow(r)
	h.cookie.clear(w, flowCookie)
	refuse := func(why string, err error) {
		h.o.Logger.Warn("approval page: OIDC sign-in failed", "reason", why, "err", err)
		h.renderSignin(w, r, h.cookie.session(r), http.StatusUnauthorized, "Sign-in failed: "+why+".")
	}
	switch {
	case f == nil:
		refuse("the sign-in took too long or was not started here", nil)
		return
	case subtle.ConstantTimeCompare([]byte(f.State), []byte(q.Get("state"))) != 1:
		refuse("the provider's answer does not match this sign-in (state)", nil)
		return
	case q.Get("error") != "":
		refuse("the provider refused it", errors.New(q.Get("error")))
		return
	}
	ctx := oidc.ClientContext(r.Context(), h.oidc.client)
	tok, err := h.oidc.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		refuse("the provider did not exchange the code", err)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		refuse("the provider sent no ID token", nil)
		return
	}
	idt, err := h.oidc.verifier.Verify(ctx, raw)
	if err != nil {
		refuse("the ID token is not valid", err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		refuse("the ID token is not for this sign-in (nonce)", nil)
		return
	}
	p := &abi.Principal{Issuer: idt.Issuer, Subject: idt.Subject, Method: abi.MethodOIDC}
	if len(h.oidc.cfg.Claims) > 0 {
		var all map[string]json.RawMessage
		if err := idt.Claims(&all); err != nil {
			refuse("the ID token's claims do not decode", err)
			return
		}
		for _, name := range h.oidc.cfg.Claims {
			v, ok := all[name]
			if !ok {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber()
			var val any
			if dec.Decode(&val) == nil {
				if p.Claims == nil {
					p.Claims = map[string]any{}
				}
				p.Claims[name] = val
			}
		}
	}
	if _, err := h.cookie.start(w, p); err != nil {
		refuse("the sign-in does not fit in a cookie (too many or too large claims: name fewer in the page's OIDC claims)", err)
		return
	}
	h.o.Logger.Info("approval page: signed in", "method", abi.MethodOIDC, "principal", principalName(p))
	http.Redirect(w, r, f.Next, http.StatusSeeOther)
}

// next returns where to go after sign-in: a path of this page, else its
// list.
func (h *handler) next(s string) string {
	if strings.HasPrefix(s, h.prefix+"/") && !strings.HasPrefix(s, "//") && !strings.ContainsAny(s, "\\\r\n") &&
		!strings.HasPrefix(s, h.prefix+"/signin") && !strings.HasPrefix(s, h.prefix+"/callback") {
		if u, err := url.Parse(s); err == nil && u.Scheme == "" && u.Host == "" {
			return s
		}
	}
	return h.prefix + "/"
}
