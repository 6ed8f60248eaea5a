package compose

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/page"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/safefile"
)

// ApprovalPagePrefix is where a front end mounts the approval page.
const ApprovalPagePrefix = "/approvals"

// ApprovalPage builds the approval page of desk as approvals.page
// configures it: token sign-in with the approver tokens approvers returns
// (each signs in as {method: token, issuer: identity.ApproverTokensName,
// subject: its name}), OIDC sign-in with approvals.page.oidc, the cookie
// key of approvals.page.cookie_key_file. The desk's page URL must be set:
// the OIDC redirect and the cookies' Secure flag follow it. Errors name
// the config key; ErrNoSignIn when neither sign-in is configured.
func ApprovalPage(ctx context.Context, l *config.Loaded, desk *approval.Desk, approvers func() *identity.Tokens, logger *slog.Logger) (http.Handler, error) {
	p := l.Approvals.Page
	base := desk.PageURL()
	o := page.Options{Desk: desk, Prefix: ApprovalPagePrefix, SessionTTL: p.SessionTTL, Logger: logger,
		Secure: strings.HasPrefix(base, "https://")}
	if approvers != nil && !approvers().Empty() {
		o.Token = func(given string) *abi.Principal {
			c := approvers().Lookup(given)
			if c == nil {
				return nil
			}
			return ApproverPrincipal(c)
		}
	}
	if oc := p.OIDC; oc != nil {
		o.OIDC = &page.OIDC{Issuer: oc.Issuer, ClientID: oc.ClientID, RedirectURL: base + "/callback", Scopes: oc.Scopes, Claims: oc.Claims}
		if oc.ClientSecretFile != "" {
			b, err := safefile.ReadFile(oc.ClientSecretFile, maxSecretBytes)
			if err != nil {
				return nil, fmt.Errorf("config %s: approvals.page.oidc.client_secret_file: %w", l.File, err)
			}
			o.OIDC.ClientSecret = strings.TrimSpace(string(b))
		}
	}
	if o.Token == nil && o.OIDC == nil {
		return nil, fmt.Errorf("config %s: approvals.page: %w", l.File, ErrNoSignIn)
	}
	if p.CookieKeyFile != "" {
		b, err := safefile.ReadFile(p.CookieKeyFile, maxSecretBytes)
		if err != nil {
			return nil, fmt.Errorf("config %s: approvals.page.cookie_key_file: %w", l.File, err)
		}
		o.CookieKey = []byte(strings.TrimSpace(string(b)))
	}
	h, err := page.New(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("config %s: approvals.page: %w", l.File, err)
	}
	return h, nil
}
