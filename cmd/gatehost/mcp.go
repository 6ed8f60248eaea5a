package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/internal/editdist"
	"github.com/gatehost/gatehost/mcpgateway"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/server"
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
	tokenFile := fs.String("token-file", "", "file of bearer tokens for --listen, one a line (also $"+server.TokenEnv+"); none means no auth, loopback only")
	insecure := fs.Bool("insecure-listen-any", false, "allow --listen on a non-loopback address without bearer tokens")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file (PEM) for --listen; with --tls-key, serve HTTPS (auth.mtls needs it)")
	tlsKey := fs.String("tls-key", "", "TLS private key file (PEM)")
	if code, done := fs.parse(args, func(int) bool { return true }); done {
		return code
	}
	g, logger, cfg, closeAll, err := openGateway(ctx, fs, *upstreamName)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeAll()
	opts := g.Options()
	if *listen == "" {
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
	toks, err := server.LoadTokens(*tokenFile)
	if err != nil {
		return fail(stderr, err)
	}
	ids, err := server.NewIdentity(ctx, cfg.File, cfg.Auth, toks)
	if err != nil {
		return fail(stderr, err)
	}
	if (*tlsCert == "") != (*tlsKey == "") || (ids.MTLS() && *tlsCert == "") {
		return fail(stderr, fmt.Errorf("%w: --tls-cert and --tls-key go together, and auth.mtls needs them", errUsage))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(stderr, fmt.Errorf("--listen %s: %w", *listen, err))
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ids.Empty() && !*insecure && (!ok || !a.IP.IsLoopback()) {
		ln.Close()
		return fail(stderr, fmt.Errorf("%w: --listen %s is not a loopback address and no bearer token is configured (--token-file or $%s); pass --insecure-listen-any to serve it unauthenticated anyway",
			errUsage, *listen, server.TokenEnv))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", ids.Require(logger, g.Handler()))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	// Readiness takes no token, as serve's /readyz: it names each
	// upstream's state, never error texts (they are in the log).
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := g.Readiness()
		for i := range r.Upstreams {
			r.Upstreams[i].Error = ""
		}
		if r.ConfigError != "" {
			r.ConfigError = "the config names tools no upstream lists (see the log)"
		}
		w.Header().Set("Content-Type", "application/json")
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	scheme := "http"
	if *tlsCert != "" {
		scheme, srv.TLSConfig = "https", ids.TLSConfig(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Info("gatehost mcp: serving Streamable HTTP", "url", scheme+"://"+ln.Addr().String()+"/mcp", "pipeline", opts.Pipeline)
	serve := func() error { return srv.Serve(ln) }
	if *tlsCert != "" {
		serve = func() error { return srv.ServeTLS(ln, *tlsCert, *tlsKey) }
	}
	if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "gatehost mcp:", err)
		return 1
	}
	return 0
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
// tracing, the store, the trust baseline and the host. closeAll undoes it
// in order.
func openGateway(ctx context.Context, fs *commonFlags, upstreamName string) (g *mcpgateway.Gateway, logger *slog.Logger, cfg *config.Loaded, closeAll func(), err error) {
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
	if opts.Baseline, err = openBaseline(cfg, rt.Store); err != nil {
		return nil, nil, nil, nil, err
	}
	if opts.Pipeline != "" {
		onlyPipeline(&cfg.Host, opts.Pipeline)
	}
	// The gateway builds and owns the host: its approvals are the host's
	// Confirmer.
	g, err = mcpgateway.New(ctx, rt.Host(), opts)
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
