package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/internal/frontend"
	"github.com/gatehost/gatehost/server"
)

// cmdServe is `gatehost serve`: its flags become server.Options; the
// server does the rest. SIGHUP reloads the config.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", "Usage: gatehost serve [flags]\n", stderr, flagConfig|flagLogLevel)
	fs.setDefault("log-level", "info")
	var o server.Options
	fs.StringVar(&o.Listen, "listen", server.DefaultListen, "address to listen on, host:port")
	fs.BoolVar(&o.InsecureListenAny, "insecure-listen-any", false, "allow a non-loopback address without auth")
	fs.StringVar(&o.TokenFile, "token-file", "", "file of agent bearer tokens, one a line, each optionally bound with sessions=ID,... (also $"+server.TokenEnv+"); none means no auth")
	fs.StringVar(&o.ApproverTokenFile, "approver-token-file", "", "file of approver bearer tokens, the only credentials POST /v1/approvals takes (also $"+server.ApproverTokenEnv+"); none means no confirmation over HTTP")
	fs.DurationVar(&o.ApprovalTTL, "approval-ttl", 0, "deprecated: set approvals.ttl in the config (how long a minted approval stays usable, 1s to 24h; default 5m)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&o.TLSKey, "tls-key", "", "TLS private key file (PEM)")
	maxBody := fs.String("max-body", "", "request body cap, such as 4MiB (default: the config's max_subject_bytes)")
	fs.DurationVar(&o.ReadHeaderTimeout, "read-header-timeout", 5*time.Second, "time to read a request's headers")
	fs.DurationVar(&o.ReadTimeout, "read-timeout", 30*time.Second, "time to read a whole request")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", 60*time.Second, "time from the end of the request's headers to the end of the answer")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 120*time.Second, "keep-alive idle time")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "time in-flight runs get to finish on shutdown")
	fs.DurationVar(&o.WatchInterval, "watch-interval", 2*time.Second, "how often to check the config file for a change (0: only SIGHUP reloads)")
	logJSON := fs.Bool("log-json", false, "log JSON lines instead of text")
	if code, done := fs.parse(args, exactly(0)); done {
		return code
	}
	o.ConfigPath = fs.config
	if fs.Changed("approval-ttl") {
		// 0 would be the library's "the config's": from the flag it is a
		// mistake.
		if err := approval.CheckTTL(o.ApprovalTTL); err != nil {
			return fail(stderr, fmt.Errorf("%w: --approval-ttl %w", errUsage, err))
		}
	}
	if *maxBody != "" {
		n, err := config.ParseSize(*maxBody)
		if err != nil || n == 0 {
			return fail(stderr, fmt.Errorf("%w: --max-body %q: want a positive size", errUsage, *maxBody))
		}
		o.MaxBody = int64(min(n, 1<<40))
	}
	logger, err := newLogger(stderr, fs.logLevel, *logJSON)
	if err != nil {
		return fail(stderr, err)
	}
	s, err := server.New(o, logger)
	if err != nil {
		return fail(stderr, err)
	}
	ln, err := s.Listen()
	if err != nil {
		_ = s.Close()
		return fail(stderr, err)
	}
	// A failed reload is logged; the old config keeps serving.
	defer frontend.OnHUP(ctx, s.Reload)()
	if err := s.Serve(ctx, ln); err != nil {
		return fail(stderr, err)
	}
	return 0
}
