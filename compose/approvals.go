package compose

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/notify"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/safefile"
)

// maxSecretBytes bounds a secret file.
const maxSecretBytes = 64 << 10

// ApproverTokens reads the approval page's approver tokens:
// approvals.page.approver_token_file, else extra (gatehost serve's
// --approver-token-file), and $GATEHOST_APPROVER_TOKENS. None of them may
// be one of agents. Empty when none is configured. Both files named, and
// not the same, is an error: neither may silently win.
func ApproverTokens(l *config.Loaded, extra string, agents *identity.Tokens) (*identity.Tokens, error) {
	file := l.Approvals.Page.ApproverTokenFile
	switch {
	case file == "":
		file = extra
	case extra != "" && !sameFile(file, extra):
		return nil, fmt.Errorf("config %s: approvals.page.approver_token_file: %q, and --approver-token-file names another file, %q: name one", l.File, file, extra)
	}
	t, err := identity.LoadApproverTokens(file, os.Getenv(identity.ApproverTokenEnv), agents)
	if err != nil {
		return nil, fmt.Errorf("config %s: approvals.page.approver_token_file: %w", l.File, err)
	}
	return t, nil
}

// ApprovalRule is who may approve: approvals.approvers, or, when the
// config names none and approver tokens exist, every approver token
// (issuer identity.ApproverTokensName). With neither, nobody: the logger says so,
// and calls that need a person are refused. An approver token's principal
// (ApproverPrincipal) approves only while its token is one of approvers:
// a token removed or replaced ends its sign-ins at the next request.
//
// An approver of approvals.approvers that no principal of the configured
// sign-ins (ApproverSignIns) can match is an error naming its field
// (*approval.ApproverError): a token subject no approver token has, an
// issuer or method nobody signs in with, a claim the OIDC sign-in does not
// carry. Every front end builds its rule here, at start and at each
// reload, so each refuses such a config alike.
func ApprovalRule(l *config.Loaded, approvers *identity.Tokens, logger *slog.Logger) (approval.Rule, error) {
	r := l.Approvals.Rule
	if err := r.CheckSignIns(ApproverSignIns(l, approvers)); err != nil {
		return approval.Rule{}, fmt.Errorf("config %s: approvals.%w", l.File, err)
	}
	r.SignedIn = func(p *abi.Principal) bool {
		if p.Method != abi.MethodToken || p.Issuer != identity.ApproverTokensName {
			return true
		}
		fp, _ := p.Claims[approval.ClaimCredential].(string)
		c := approvers.ByFingerprint(fp)
		return c != nil && c.Name == p.Subject
	}
	if len(r.Approvers) == 0 {
		if !approvers.Empty() {
			r.Approvers = []approval.Approver{{Method: "token", Issuer: identity.ApproverTokensName}}
		} else if logger != nil && l.Approvals.Elicitation != config.ElicitForm {
			logger.Warn("config " + l.File + ": no approver is configured (approvals.approvers, approvals.page.approver_token_file or $" +
				identity.ApproverTokenEnv + "): a call that needs a person's approval is refused")
		}
	}
	return r, nil
}

// ApproverSignIns are the ways approvers sign in under l: the approver
// tokens (ApproverPrincipal: method token, issuer
// identity.ApproverTokensName, subject a token's name, no claim an
// approver can name) and approvals.page.oidc (method oidc, its issuer,
// any subject, the claims it copies). No front end signs approvers in by
// mTLS or with an agent's credential.
func ApproverSignIns(l *config.Loaded, approvers *identity.Tokens) []approval.SignIn {
	var ins []approval.SignIn
	if !approvers.Empty() {
		ins = append(ins, approval.SignIn{Name: "the approver tokens", Method: abi.MethodToken, Issuer: identity.ApproverTokensName,
			Subjects: approvers.TokenNames()})
	}
	if oc := l.Approvals.Page.OIDC; oc != nil {
		ins = append(ins, approval.SignIn{Name: "approvals.page.oidc", Method: abi.MethodOIDC, Issuer: oc.Issuer, Claims: oc.Claims})
	}
	return ins
}

// ApproverPrincipal is the principal of approver token c, on the
// approval page and on gatehost serve's POST /v1/approvals alike: issuer
// identity.ApproverTokensName, subject the token's name, and the token's
// fingerprint (never the token) for ApprovalRule to check again.
func ApproverPrincipal(c *identity.Credential) *abi.Principal {
	return &abi.Principal{Method: abi.MethodToken, Issuer: identity.ApproverTokensName, Subject: c.Name,
		Claims: map[string]any{approval.ClaimCredential: c.Fingerprint()}}
}

// ErrApprovalsChanged: a reload would change part of the approvals:
// section a front end holds for its life.
var ErrApprovalsChanged = errors.New("changed; a reload applies only approvals.approvers and approvals.allow_self_approval (restart to change the rest)")

// CheckApprovalsReload is the one reload rule of the approvals: section
// in gatehost serve and gatehost mcp: who may approve
// (approvals.approvers, approvals.allow_self_approval) may change, and the
// front end then applies ApprovalRule of the reloaded config and approver
// tokens to its desk (approval.Desk.SetRule); any other change (store,
// ttl, page, webhooks, …) is refused with ErrApprovalsChanged, since the
// store and the page live as long as the process.
func CheckApprovalsReload(running, l *config.Loaded) error {
	a, b := running.Approvals, l.Approvals
	a.Rule, b.Rule, a.Deprecated, b.Deprecated = approval.Rule{}, approval.Rule{}, nil, nil
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("config %s: approvals: %w", l.File, ErrApprovalsChanged)
	}
	return nil
}

// OpenNotifier builds the approvals.webhooks notifier, reading each
// webhook's secret (secret_file, secret_env); nil when none is
// configured. url is the page of a request (approval.Desk.URL).
func OpenNotifier(l *config.Loaded, url func(id string) string, logger *slog.Logger) (*notify.Notifier, error) {
	if len(l.Approvals.Webhooks) == 0 {
		return nil, nil
	}
	hooks := make([]notify.Webhook, 0, len(l.Approvals.Webhooks))
	for i, w := range l.Approvals.Webhooks {
		h := notify.Webhook{Name: w.Name, URL: w.URL, Format: w.Format, Timeout: w.Timeout}
		if w.Retries != nil {
			h.Retries = *w.Retries
			if h.Retries == 0 {
				h.Retries = -1 // configured 0: no retries
			}
		}
		switch {
		case w.SecretFile != "":
			b, err := safefile.ReadFile(w.SecretFile, maxSecretBytes)
			if err != nil {
				return nil, fmt.Errorf("config %s: approvals.webhooks[%d].secret_file: %w", l.File, i, err)
			}
			h.Secret = bytes.TrimSpace(b)
		case w.SecretEnv != "":
			v, ok := os.LookupEnv(w.SecretEnv)
			if !ok || v == "" {
				return nil, fmt.Errorf("config %s: approvals.webhooks[%d].secret_env: $%s is not set", l.File, i, w.SecretEnv)
			}
			h.Secret = []byte(v)
		}
		hooks = append(hooks, h)
	}
	n, err := notify.New(hooks, notify.Options{URL: url, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("config %s: approvals: %w", l.File, err)
	}
	return n, nil
}

// ErrNoSignIn: the approval page was asked for, and no approver can sign
// in to it.
var ErrNoSignIn = errors.New("no sign-in for approvers: set approvals.page.approver_token_file (or $" + identity.ApproverTokenEnv + ") or approvals.page.oidc")

// sameFile reports whether a and b name one file: the same path once
// cleaned and made absolute, or, when both exist, the same file on disk.
func sameFile(a, b string) bool {
	aa, errA := filepath.Abs(a)
	bb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == bb {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
