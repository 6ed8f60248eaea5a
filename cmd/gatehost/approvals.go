package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
)

const approvalsUsage = `Usage: gatehost approvals page [flags]

Serves the approval page on its own, over the config's shared approvals
store (approvals.store file or postgres): approvers sign in (approver
tokens of approvals.page.approver_token_file or $GATEHOST_APPROVER_TOKENS,
or approvals.page.oidc) and decide the calls that gatehost serve and
gatehost mcp processes sharing the store hold for a person. For a fleet,
run it beside the replicas, or let each replica serve the page itself.
Decisions are recorded in the config's event log.
Exit codes: 0 stopped by a signal, 1 the page failed, 2 a usage or config
error.
`

// DefaultApprovalsListen is where gatehost approvals page listens without
// --listen or approvals.page.listen.
const DefaultApprovalsListen = "127.0.0.1:8089"

func cmdApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub, code, done := subcommand(args, approvalsUsage, stdout, stderr)
	if done {
		return code
	}
	if sub != "page" {
		fmt.Fprintf(stderr, "gatehost approvals: unknown subcommand %q\n\n%s", sub, approvalsUsage)
		return exitUsage
	}
	fs := newFlags("approvals page", approvalsUsage, stderr, flagConfig|flagLogLevel)
	fs.setDefault("log-level", "info")
	listen := fs.String("listen", "", "address to serve the page on (default approvals.page.listen, else "+DefaultApprovalsListen+")")
	if code, done := fs.parse(args[1:], exactly(0)); done {
		return code
	}
	logger, cfg, err := fs.setup()
	if err != nil {
		return fail(stderr, err)
	}
	defer cfg.Close()
	if err := serveApprovalPage(ctx, cfg, *listen, logger); err != nil {
		if errors.Is(err, errUsage) {
			return fail(stderr, err)
		}
		fmt.Fprintln(stderr, "gatehost approvals page:", err)
		return 1
	}
	return 0
}

// serveApprovalPage serves the page of cfg's shared approvals store until
// ctx is done.
func serveApprovalPage(ctx context.Context, cfg *config.Loaded, listen string, logger *slog.Logger) error {
	if cfg.Approvals.Store == config.ApprovalsMemory {
		return fmt.Errorf("%w: config %s: approvals.store: a page apart from the front ends needs a store they share (file or postgres), not memory", errUsage, cfg.File)
	}
	rt, err := compose.Open(ctx, cfg, compose.Options{Logger: logger, Version: buildVersion()})
	if err != nil {
		return err
	}
	defer rt.Close()
	st, err := compose.OpenApprovals(cfg, rt.Store)
	if err != nil {
		return err
	}
	evlog := rt.Store.EventLog()
	if evlog == nil {
		return fmt.Errorf("%w: config %s: event_log.path: required: the page records every decision", errUsage, cfg.File)
	}
	apps, err := approval.New(approval.Options{Store: st, TTL: cfg.Approvals.TTL, Logger: logger,
		Record: func(r eventlog.Record) error { _, err := evlog.Append(r); return err }})
	if err != nil {
		return err
	}
	approvers, err := compose.ApproverTokens(cfg, "", nil)
	if err != nil {
		return err
	}
	rule, err := compose.ApprovalRule(cfg, approvers, logger)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	desk, err := approval.NewDesk(approval.DeskOptions{Approvals: apps, Rule: rule,
		MaxPending: cfg.Approvals.MaxPending, Logger: logger})
	if err != nil {
		return err
	}
	addr := listen
	if addr == "" {
		addr = cfg.Approvals.Page.Listen
	}
	if addr == "" {
		addr = DefaultApprovalsListen
	}
	// The page signs its approvers in itself: any address may serve it.
	ln, err := frontend.Listen(addr, true, false)
	if err != nil {
		return err
	}
	pageCfg := *cfg
	pageCfg.Approvals.Page.Listen = ""
	page, err := compose.OpenApprovalPage(ctx, &pageCfg, desk, func() *identity.Tokens { return approvers }, ln, "", logger)
	if err != nil {
		ln.Close()
		return err
	}
	if page.Mount == nil {
		ln.Close()
		return fmt.Errorf("%w: config %s: approvals.page: %w", errUsage, cfg.File, compose.ErrNoSignIn)
	}
	mux := http.NewServeMux()
	mux.Handle(compose.ApprovalPagePrefix+"/", page.Mount)
	mux.Handle("/", http.RedirectHandler(compose.ApprovalPagePrefix+"/", http.StatusSeeOther))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	return frontend.Serve(ctx, srv, ln, "", "", nil, frontend.Shutdown{Timeout: 5 * time.Second, Logger: logger, Name: "gatehost approvals page"})
}
