package mcpgateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
)

// DefaultShutdownTimeout bounds Serve's graceful shutdown.
const DefaultShutdownTimeout = 5 * time.Second

// ServeOptions configure Serve, the gateway's HTTP front end (gatehost mcp
// --listen). Zero fields are fine.
type ServeOptions struct {
	// TLSCert and TLSKey are PEM files; with both, Serve serves HTTPS.
	TLSCert, TLSKey string
	// ClientCerts adapts the TLS config, to ask for client certificates
	// (auth.mtls); nil leaves it.
	ClientCerts func(*tls.Config) *tls.Config
	// Require authenticates the callers of /mcp and /metrics (a bearer
	// token, OIDC, a client certificate); nil lets every caller through,
	// and the listener must then be loopback.
	Require func(http.Handler) http.Handler
	// Resource is the gateway as an OAuth 2.0 protected resource
	// (auth.resource): its metadata (RFC 9728) is served without a
	// credential at /.well-known/oauth-protected-resource and its
	// path-suffixed form. Require's challenges name it. Nil: no such
	// routes.
	Resource *identity.Resource
	// Metrics serves /metrics (Prometheus text exposition); nil: no
	// such route.
	Metrics http.Handler
	// Page is the approval page (package approval/page), mounted at
	// PagePrefix; it signs its approvers in itself, so Require does not
	// apply. Nil: no such route.
	Page       http.Handler
	PagePrefix string
	// Watch runs beside serving until Serve's context is done: the
	// config file's poll of a reloading front end. Nil: none.
	Watch func(ctx context.Context)
	// ShutdownTimeout is the time in-flight requests get once the
	// context is done; 0 is DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// Serve serves the gateway's HTTP front end on ln until ctx is done, then
// shuts down gracefully: it stops accepting and lets in-flight requests
// finish within ServeOptions.ShutdownTimeout. Routes: /mcp (Handler, behind
// Require), GET /metrics (behind Require, when set), and GET /healthz,
// GET /readyz and the protected resource metadata (when Resource is set),
// which take no credential. Serve does not close the
// gateway: Close it after.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener, o ServeOptions) error {
	require := o.Require
	if require == nil {
		require = func(h http.Handler) http.Handler { return h }
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", require(g.Handler()))
	frontend.MountResource(mux, o.Resource)
	if o.Metrics != nil {
		mux.Handle("GET /metrics", require(o.Metrics))
	}
	if o.Page != nil {
		mux.Handle(o.PagePrefix+"/", o.Page)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	mux.HandleFunc("GET /readyz", g.handleReady)
	logger := g.opts.Logger
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	if o.Watch != nil {
		go o.Watch(ctx)
	}
	attrs := []any{"url", frontend.Scheme(o.TLSCert) + "://" + ln.Addr().String() + "/mcp", "pipeline", g.opts.Pipeline}
	if o.Resource != nil {
		attrs = append(attrs, "resource", o.Resource.URI, "resource_metadata", o.Resource.MetadataURL())
	}
	logger.Info("gatehost mcp: serving Streamable HTTP", attrs...)
	return frontend.Serve(ctx, srv, ln, o.TLSCert, o.TLSKey, o.ClientCerts,
		frontend.Shutdown{Timeout: cmp.Or(o.ShutdownTimeout, DefaultShutdownTimeout), Logger: logger, Name: "gatehost mcp"})
}

// handleReady is /readyz: like serve's, it takes no token, and names each
// upstream's state, never error texts (they are in the log).
func (g *Gateway) handleReady(w http.ResponseWriter, _ *http.Request) {
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
}
