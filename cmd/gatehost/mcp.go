package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/mcpgateway"
)

const mcpUsage = `Usage: gatehost mcp [flags] [-- UPSTREAM-COMMAND...]

Serve MCP to an agent as if gatehost were the server, in front of the MCP
servers in the config's mcp.upstreams (and the stdio server command given
after --, named by --upstream-name). Every tools/call runs the pipeline
before anything is sent upstream; everything else passes through.

Without --listen the agent speaks MCP on stdin/stdout (an mcp.json server
command); with it, Streamable HTTP on http://ADDR/mcp.
`

// cmdMCP runs the MCP gateway. In stdio mode stdout is the protocol, so
// nothing else is written there; logs go to stderr.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("mcp", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "config file (default ./gatehost.yaml)")
	pipeline := fs.String("pipeline", "", "tool_call pipeline for every tools/call (default mcp.pipeline of the config)")
	listen := fs.String("listen", "", "serve Streamable HTTP on ADDR (path /mcp) instead of stdio")
	upstreamName := fs.String("upstream-name", "upstream", "name of the upstream given after --")
	tokenFile := fs.String("token-file", "", "file of bearer tokens for --listen, one a line (also $"+tokenEnv+"); none means no auth, loopback only")
	insecure := fs.Bool("insecure-listen-any", false, "allow --listen on a non-loopback address without bearer tokens")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage); fs.PrintDefaults() }
	if code, done := parseFlags(fs, args, func(int) bool { return true }); done {
		return code
	}
	logger, err := newLogger(stderr, *logLevel, false)
	if err != nil {
		return fail(stderr, err)
	}
	cfg, err := loadConfig(*configPath)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeDomains(cfg.host.Domains)
	opts, err := cfg.mcp.gatewayOptions()
	if err != nil {
		return fail(stderr, fmt.Errorf("config %s: %w", cfg.file, err))
	}
	if extra := fs.Args(); len(extra) > 0 {
		opts.Upstreams = append(opts.Upstreams, mcpgateway.Upstream{Name: *upstreamName, Command: extra})
	}
	opts.Pipeline = cmp.Or(pipelineFlag(*pipeline), opts.Pipeline)
	// One writer of the log: the host records decisions, the gateway
	// approvals.
	evlog, err := eventlog.Open(cfg.logPath, eventlog.Options{Logger: logger})
	if err != nil {
		return fail(stderr, fmt.Errorf("config %s: event_log.path: %w", cfg.file, err))
	}
	defer evlog.Close()
	cfg.host.EventLogPath, cfg.host.EventLog, cfg.host.Logger = "", evlog, logger
	if opts.Pipeline != "" {
		onlyPipeline(&cfg.host, opts.Pipeline)
	}
	h, err := host.New(ctx, cfg.host)
	if err != nil {
		return fail(stderr, hostError(cfg.file, err))
	}
	defer h.Close(context.WithoutCancel(ctx))
	opts.EventLog, opts.Logger = evlog, logger
	g, err := mcpgateway.New(h, opts)
	if err != nil {
		if errors.Is(err, mcpgateway.ErrOptions) {
			err = fmt.Errorf("config %s: mcp: %w (or --pipeline / -- UPSTREAM)", cfg.file, err)
		}
		return fail(stderr, err)
	}
	defer g.Close()
	if *listen == "" {
		// The SDK's stdio transport reads and writes the process's own
		// stdin and stdout, which run was given.
		_, _ = stdin, stdout
		if err := g.ServeTransport(ctx, &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(stderr, "gatehost mcp:", err)
			return 1
		}
		return 0
	}
	toks, err := loadTokens(*tokenFile, os.Getenv(tokenEnv))
	if err != nil {
		return fail(stderr, err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(stderr, fmt.Errorf("--listen %s: %w", *listen, err))
	}
	if a, ok := ln.Addr().(*net.TCPAddr); toks.empty() && !*insecure && (!ok || !a.IP.IsLoopback()) {
		ln.Close()
		return fail(stderr, fmt.Errorf("%w: --listen %s is not a loopback address and no bearer token is configured (--token-file or $%s); pass --insecure-listen-any to serve it unauthenticated anyway",
			errUsage, *listen, tokenEnv))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", bearerOnly(toks, g.Handler()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Info("gatehost mcp: serving Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "pipeline", opts.Pipeline)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "gatehost mcp:", err)
		return 1
	}
	return 0
}

// bearerOnly requires one of toks as a bearer token; no tokens, no check.
func bearerOnly(toks *tokenSet, next http.Handler) http.Handler {
	if toks.empty() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || toks.lookup(tok) == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehost"`)
			http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
