package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/editdist"
	"github.com/gatehost/gatehost/internal/frontend"
	"github.com/gatehost/gatehost/mcpgateway"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/store"
)

const mcpUsage = `Usage: gatehost mcp [flags] [-- UPSTREAM-COMMAND...]
       gatehost mcp approve [flags] [--yes] [--tool TOOL]... [-- UPSTREAM-COMMAND...]

Serve MCP to an agent as if gatehost were the server, in front of the MCP
servers in the config's mcp.upstreams (and the stdio server command given
after --, named by --upstream-name). Every tools/call runs the pipeline
before anything is sent upstream; everything else passes through.

Without --listen the agent speaks MCP on stdin/stdout (an mcp.json server
command); with it, Streamable HTTP on http://ADDR/mcp.
Exit codes (stdio): 0 the client ended the session; 1 the gateway failed,
or no upstream could ever be started (each one's error is on stderr);
2 a usage or config error.
`

// cmdMCP runs the MCP gateway. In stdio mode stdout is the protocol, so
// nothing else is written there; logs go to stderr.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "approve" {
		return cmdMCPApprove(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("mcp", mcpUsage, stderr, flagConfig|flagPipeline|flagLogLevel)
	fs.setUsage("pipeline", "tool_call pipeline for every tools/call (default mcp.pipeline of the config)")
	fs.setDefault("log-level", "info")
	listen := fs.String("listen", "", "serve Streamable HTTP on ADDR (path /mcp) instead of stdio")
	upstreamName := fs.String("upstream-name", "upstream", "name of the upstream given after --")
	tokenFile := fs.String("token-file", "", "file of bearer tokens for --listen, one a line (also $"+identity.TokenEnv+"); none means no auth, loopback only")
	insecure := fs.Bool("insecure-listen-any", false, "allow --listen on a non-loopback address without bearer tokens")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file (PEM) for --listen; with --tls-key, serve HTTPS (auth.mtls needs it)")
	tlsKey := fs.String("tls-key", "", "TLS private key file (PEM)")
	watch := fs.Duration("watch-interval", 2*time.Second, "with --listen, how often to check the config file for a change (0: only SIGHUP reloads)")
	if code, done := fs.parse(args, func(int) bool { return true }); done {
		return code
	}
	// The decisions' metrics, served on --listen's /metrics.
	metrics := frontend.NewMetrics()
	g, logger, cfg, closeAll, err := openGateway(ctx, fs, *upstreamName, metrics.Hooks())
	if err != nil {
		return fail(stderr, err)
	}
	defer closeAll()
	if *listen == "" {
		// The approval page, on a listener of its own (approvals.page.listen).
		approvers, err := compose.ApproverTokens(cfg, "", nil)
		if err != nil {
			return fail(stderr, err)
		}
		page, err := compose.OpenApprovalPage(ctx, cfg, g.Desk(), func() *identity.Tokens { return approvers }, nil, "", logger)
		if err != nil {
			return fail(stderr, err)
		}
		defer page.Close()
		// The SDK's stdio transport reads and writes the process's own
		// stdin and stdout, which run was given.
		_, _ = stdin, stdout
		if err := g.ServeTransport(ctx, mcpgateway.NewStdioTransport(os.Stdin, os.Stdout)); err != nil {
			fmt.Fprintln(stderr, "gatehost mcp:", err)
			return 1
		}
		if g.NoUpstreamEverUp() {
			// The client saw a gateway with no tools; the exit code says
			// why, for whoever reads the MCP client's server status.
			for _, u := range g.Upstreams() {
				fmt.Fprintf(stderr, "gatehost mcp: upstream %q never started: %s\n", u.Upstream, u.Error)
			}
			return 1
		}
		return 0
	}
	toks, err := identity.LoadTokens(*tokenFile, os.Getenv(identity.TokenEnv))
	if err != nil {
		return fail(stderr, err)
	}
	if err := frontend.CheckTLS(*tlsCert, *tlsKey); err != nil {
		return fail(stderr, err)
	}
	ids, err := frontend.NewIdentities(ctx, cfg.File, cfg.Auth, *tlsCert)
	if err != nil {
		return fail(stderr, err)
	}
	ln, err := frontend.Listen(*listen, ids.Authed(toks), *insecure)
	if err != nil {
		return fail(stderr, err)
	}
	// Approver tokens are never agent tokens: checked against toks.
	approvers, err := compose.ApproverTokens(cfg, "", toks)
	if err != nil {
		ln.Close()
		return fail(stderr, err)
	}
	// Reloaded with the agents' tokens: the page signs in with the
	// current ones.
	var approverToks atomic.Pointer[identity.Tokens]
	approverToks.Store(approvers)
	page, err := compose.OpenApprovalPage(ctx, cfg, g.Desk(), approverToks.Load, ln, *tlsCert, logger)
	if err != nil {
		ln.Close()
		return fail(stderr, err)
	}
	defer page.Close()
	var tokens atomic.Pointer[identity.Tokens]
	tokens.Store(toks)
	metrics.Register(g.Collector())
	reloader := &frontend.Reloader{Path: cfg.File, Interval: *watch, Name: "gatehost mcp", Logger: logger, Metrics: metrics,
		Apply: reloadGateway(g, fs, cfg, *tokenFile, &tokens, &approverToks)}
	reloader.Mark()
	reloader.Started()
	// A failed reload is logged; the old config keeps serving.
	defer frontend.OnHUP(ctx, func(ctx context.Context) error { return reloader.Reload(ctx, "SIGHUP") })()
	err = g.Serve(ctx, ln, mcpgateway.ServeOptions{TLSCert: *tlsCert, TLSKey: *tlsKey, ClientCerts: ids.TLSConfig,
		Require:  func(h http.Handler) http.Handler { return ids.Require(tokens.Load, logger, h) },
		Resource: ids.Resource(),
		Metrics:  metrics.Handler(), Watch: reloader.Run, Page: page.Mount, PagePrefix: compose.ApprovalPagePrefix})
	reloader.Stop()
	if err != nil {
		fmt.Fprintln(stderr, "gatehost mcp:", err)
		return 1
	}
	return 0
}

// reloadGateway is gatehost mcp's part of a config reload
// (frontend.Reloader): the config file read as at start, the token file
// and the upstreams' secrets again; the config's pipelines and plugins become the host the
// gateway swaps in. What the gateway holds for its life — the mcp:,
// auth:, store:, approvals:, tracing: and decision_log: sections, the event
// log and session paths — must be unchanged (a restart changes them), and
// the catalog stays the running one (the trust baseline's tools).
func reloadGateway(g *mcpgateway.Gateway, fs *commonFlags, start *config.Loaded, tokenFile string, tokens, approvers *atomic.Pointer[identity.Tokens]) func(context.Context, uint64) ([]any, error) {
	pipeline := g.Options().Pipeline
	var mu sync.Mutex
	running := start
	return func(ctx context.Context, _ uint64) ([]any, error) {
		toks, err := identity.LoadTokens(tokenFile, os.Getenv(identity.TokenEnv))
		if err != nil {
			return nil, err
		}
		if err := frontend.CheckTokenSwap(tokens.Load(), toks); err != nil {
			return nil, err
		}
		l, err := fs.load()
		if err != nil {
			return nil, err
		}
		if err := sameForLife(start, l); err != nil {
			_ = l.Close()
			return nil, err
		}
		// The approver tokens are read again too (never agent tokens).
		apprs, err := compose.ApproverTokens(l, "", toks)
		if err != nil {
			_ = l.Close()
			return nil, err
		}
		// Checked before anything is swapped: who may approve under them.
		rule, err := compose.ApprovalRule(l, apprs, nil)
		if err != nil {
			_ = l.Close()
			return nil, err
		}
		// The upstreams' secrets are read again (a rotated file or
		// variable takes effect); the exchanged tokens start afresh.
		opts, err := gatewayOptions(l.MCP)
		if err == nil {
			err = g.SetCredentials(opts.Upstreams)
		}
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("config %s: %w", l.File, err)
		}
		onlyPipeline(&l.Host, pipeline)
		mu.Lock()
		prev := running
		mu.Unlock()
		if err := g.Reload(ctx, l.Host, func() { _ = prev.Close() }); err != nil {
			_ = l.Close()
			if !errors.Is(err, mcpgateway.ErrPipeline) {
				err = l.HostError(err)
			}
			return nil, fmt.Errorf("config %s: %w", l.File, err)
		}
		mu.Lock()
		running = l
		mu.Unlock()
		// Checked at load: the rule of the reloaded approvers and tokens.
		if err := g.Desk().SetRule(rule); err != nil {
			return nil, fmt.Errorf("config %s: %w", l.File, err)
		}
		tokens.Store(toks)
		approvers.Store(apprs)
		return []any{"pipeline", pipeline}, nil
	}
}

// sameForLife refuses a reloaded config l that changes what the gateway
// built at start holds for its life.
func sameForLife(start, l *config.Loaded) error {
	for _, k := range []struct {
		key  string
		same bool
	}{
		{"mcp", reflect.DeepEqual(start.MCP, l.MCP)},
		{"auth", reflect.DeepEqual(start.Auth, l.Auth)},
		{"store", reflect.DeepEqual(start.Store, l.Store)},
		{"event_log.path", start.LogPath == l.LogPath},
		{"sessions.path", start.SessionPath == l.SessionPath},
		{"tracing", start.Tracing.Equal(l.Tracing)},
		{"decision_log", reflect.DeepEqual(start.DecisionLog, l.DecisionLog)},
	} {
		if !k.same {
			return fmt.Errorf("config %s: %s: changed; a reload keeps what the running gateway was started with (restart to change it)", l.File, k.key)
		}
	}
	// Who may approve is applied; the rest of approvals: is kept, as by
	// gatehost serve.
	return compose.CheckApprovalsReload(start, l)
}

// checkMCPPipeline refuses a pipeline the config does not define, naming
// where it was given (--pipeline, or mcp.pipeline in the file) and the
// config's pipeline closest to it.
func checkMCPPipeline(cfg *config.Loaded, name string, flag bool) error {
	if _, ok := cfg.Host.Pipelines[name]; ok || name == "" {
		return nil
	}
	hint := ""
	if c, ok := editdist.Closest(name, slices.Sorted(maps.Keys(cfg.Host.Pipelines))); ok {
		hint = fmt.Sprintf("; did you mean %q?", c)
	}
	if flag {
		return fmt.Errorf("%w: --pipeline %q: no such pipeline in config %s%s", errUsage, name, cfg.File, hint)
	}
	return fmt.Errorf("config %s: mcp.pipeline: %q is not a pipeline of the config%s", cfg.File, name, hint)
}

// openGateway builds the gateway of the mcp command's flags: the config,
// tracing, the store, the trust baseline and the host, whose decisions go
// to hooks. closeAll undoes it
// in order.
func openGateway(ctx context.Context, fs *commonFlags, upstreamName string, hooks *host.Hooks) (g *mcpgateway.Gateway, logger *slog.Logger, cfg *config.Loaded, closeAll func(), err error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if extra := fs.Args(); len(extra) > 0 {
		// A domain var may be read from its command (the directory a
		// filesystem server serves).
		fs.upstreams = map[string][]string{upstreamName: extra}
	}
	logger, cfg, err = fs.setup()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	closers = append(closers, func() { _ = cfg.Close() })
	opts, err := gatewayOptions(cfg.MCP)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("config %s: %w", cfg.File, err)
	}
	if extra := fs.Args(); len(extra) > 0 {
		opts.Upstreams = append(opts.Upstreams, mcpgateway.Upstream{Name: upstreamName, Command: extra})
	}
	opts.Pipeline = cmp.Or(pipelineFlag(fs.pipeline), opts.Pipeline)
	if err := checkMCPPipeline(cfg, opts.Pipeline, fs.pipeline != ""); err != nil {
		return nil, nil, nil, nil, err
	}
	// The composition root opens the store (with PostgreSQL, the fleet's
	// sessions, log and catalog), the tracer and the decision-log export.
	rt, err := compose.Open(ctx, cfg, compose.Options{Logger: logger, Version: buildVersion(), ExportDecisions: true})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	closers = append(closers, func() { _ = rt.Close() })
	opts.Logger = logger
	// The one approval TTL and store of gatehost serve and gatehost mcp.
	for _, d := range cfg.Approvals.Deprecated {
		logger.Warn("gatehost mcp: config " + cfg.File + ": " + d)
	}
	opts.ApprovalTTL = cfg.Approvals.TTL
	if opts.ApprovalStore, err = compose.OpenApprovals(cfg, rt.Store); err != nil {
		return nil, nil, nil, nil, err
	}
	// Who approves: approvers on the approval page (never the MCP client,
	// unless approvals.elicitation says form).
	approvers, err := compose.ApproverTokens(cfg, "", nil)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	opts.Elicitation, opts.MaxPendingApprovals = cfg.Approvals.Elicitation, cfg.Approvals.MaxPending
	if opts.Approvers, err = compose.ApprovalRule(cfg, approvers, logger); err != nil {
		return nil, nil, nil, nil, err
	}
	opts.ApprovalPageURL = cfg.Approvals.Page.URL
	notifier, err := compose.OpenNotifier(cfg, func(id string) string { return g.Desk().URL(id) }, logger)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if notifier != nil {
		opts.NotifyApproval = notifier.Notify
		closers = append(closers, notifier.Close)
	}
	if opts.Baseline, err = openBaseline(cfg, rt.Store); err != nil {
		return nil, nil, nil, nil, err
	}
	if opts.Pipeline != "" {
		onlyPipeline(&cfg.Host, opts.Pipeline)
	}
	// The gateway builds and owns the host: its approvals are the host's
	// Confirmer.
	hc := rt.Host()
	hc.Hooks = hooks
	g, err = mcpgateway.New(ctx, hc, opts)
	if err != nil {
		if errors.Is(err, mcpgateway.ErrOptions) {
			err = fmt.Errorf("config %s: mcp: %w (or --pipeline / -- UPSTREAM)", cfg.File, err)
		} else if !errors.Is(err, mcpgateway.ErrPipeline) {
			err = cfg.HostError(err)
		}
		return nil, nil, nil, nil, err
	}
	closers = append(closers, func() { _ = g.Close() })
	return g, logger, cfg, cleanup, nil
}

// openBaseline opens the gateway's trust baseline, the store's
// (store.Store.Baseline): with a PostgreSQL store, the fleet's (every
// replica shares it); else mcp.baseline.path, or a lock file beside the
// session file (sessions.path), shared by every gatehost process on the
// host; with neither, memory (the gateway's life).
func openBaseline(cfg *config.Loaded, st store.Store) (baseline.Store, error) {
	if st.Shared() && cfg.MCP.Baseline.Path != "" {
		return nil, fmt.Errorf("config %s: mcp.baseline.path: the baseline is the PostgreSQL store's with store.kind postgres; remove the key", cfg.File)
	}
	b, err := st.Baseline()
	if err != nil {
		return nil, fmt.Errorf("config %s: mcp.baseline.path: %w", cfg.File, err)
	}
	return b, nil
}
