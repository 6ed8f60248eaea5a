package compose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
)

// PageServer is the approval page of a front end, as approvals.page
// configures it (OpenApprovalPage).
type PageServer struct {
	// Mount is the handler to mount at ApprovalPagePrefix on the
	// front end's own listener; nil when the page has a listener of its
	// own (approvals.page.listen) or is not served.
	Mount http.Handler
	// stop ends the page's own listener.
	stop func()
}

// Close stops the page's own listener, if any.
func (p *PageServer) Close() {
	if p != nil && p.stop != nil {
		p.stop()
	}
}

// OpenApprovalPage serves desk's approval page: on a listener of its own
// when approvals.page.listen says so, else on the front end's listener ln
// (nil over stdio: then no page unless approvals.page.listen). It sets the
// desk's page URL: approvals.page.url, or the listener's. With no sign-in
// configured (no approver token, no OIDC) there is no page, which is an
// error only when approvals.page.listen asked for one. approvers returns
// the current approver tokens (they may be reloaded).
func OpenApprovalPage(ctx context.Context, cfg *config.Loaded, desk *approval.Desk, approvers func() *identity.Tokens, ln net.Listener, tlsCert string, logger *slog.Logger) (*PageServer, error) {
	pc := cfg.Approvals.Page
	signIn := !approvers().Empty() || pc.OIDC != nil
	if pc.Listen == "" && (ln == nil || !signIn) {
		if pc.URL != "" {
			// Served by another process (gatehost approvals page, serve):
			// the desk links there.
			return &PageServer{}, desk.SetPageURL(pc.URL)
		}
		return &PageServer{}, nil
	}
	if !signIn {
		return nil, fmt.Errorf("config %s: approvals.page.listen: %w", cfg.File, ErrNoSignIn)
	}
	own := pc.Listen != ""
	if own {
		// The page signs its approvers in itself: any address may serve it.
		var err error
		if ln, err = frontend.Listen(pc.Listen, true, false); err != nil {
			return nil, fmt.Errorf("config %s: approvals.page.listen: %w", cfg.File, err)
		}
		tlsCert = ""
	}
	base := pc.URL
	if base == "" {
		var err error
		if base, err = frontend.BaseURL(ln, tlsCert, ApprovalPagePrefix); err != nil {
			if own {
				ln.Close()
			}
			return nil, fmt.Errorf("config %s: approvals.page.url: required: %w", cfg.File, err)
		}
	}
	if err := desk.SetPageURL(base); err != nil {
		if own {
			ln.Close()
		}
		return nil, fmt.Errorf("config %s: approvals.page.url: %w", cfg.File, err)
	}
	h, err := ApprovalPage(ctx, cfg, desk, approvers, logger)
	if err != nil {
		if own {
			ln.Close()
		}
		return nil, err
	}
	logger.Info("approval page", "url", base+"/")
	if !own {
		return &PageServer{Mount: h}, nil
	}
	mux := http.NewServeMux()
	mux.Handle(ApprovalPagePrefix+"/", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := frontend.Start(srv, ln, "", "", nil)
	return &PageServer{stop: func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("approval page: "+err.Error(), "url", cmp.Or(base, ""))
		}
	}}, nil
}
