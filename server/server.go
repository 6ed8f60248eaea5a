package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/notify"
	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
	"github.com/gatehost/gatehost/store"
)

// DefaultListen is loopback: with no auth configured nothing else is
// allowed without Options.InsecureListenAny.
const DefaultListen = "127.0.0.1:8490"

// Options configure a Server; `gatehost serve`'s flags fill them
// (docs/HTTP-API.md). New fills each zero field that has a default
// (Defaults); a zero WatchInterval or MaxBody is meaningful.
type Options struct {
	// ConfigPath is the config file ("" is config.DefaultFile), read at
	// New and again at each reload.
	ConfigPath string
	// Load reads ConfigPath; nil means config.Load.
	Load func(path string) (*config.Loaded, error)
	// Listen is the address Listen binds, host:port ("" is DefaultListen).
	Listen string
	// InsecureListenAny allows a non-loopback Listen without bearer
	// tokens.
	InsecureListenAny bool
	// TokenFile holds the agents' bearer tokens, one a line, each
	// optionally bound with sessions=ID,... ($GATEHOST_TOKEN too); none
	// means no auth.
	TokenFile string
	// TLSCert and TLSKey are PEM files; with both, Serve serves HTTPS.
	TLSCert, TLSKey string
	// MaxBody caps a request body in bytes; 0 means the config's
	// max_subject_bytes.
	MaxBody int64
	// Timeouts of the HTTP server Serve runs (net/http.Server's fields).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout is the time in-flight runs get to finish once
	// Serve's context is done.
	ShutdownTimeout time.Duration
	// WatchInterval is how often Serve polls the config file for a change;
	// 0 turns watching off (Reload still reloads).
	WatchInterval time.Duration
	// RetryAfter is the Retry-After of an overloaded answer.
	RetryAfter time.Duration
	// ApproverTokenFile holds the tokens of POST /v1/approvals
	// ($GATEHOST_APPROVER_TOKEN too); none means no confirmation over
	// HTTP.
	ApproverTokenFile string
	// ApprovalTTL is deprecated (--approval-ttl): the config's
	// approvals.ttl is the one approval TTL. When set (1s to 24h) it
	// replaces the config's default, and is an error when the config sets
	// another; 0 means the config's.
	ApprovalTTL time.Duration
	// Now is the clock of approvals (minting, expiry); nil means time.Now.
	Now func() time.Time
}

// Defaults returns o with every zero field that has a default set to it,
// as `gatehost serve` documents its flags.
func (o Options) Defaults() Options {
	o.ConfigPath = cmp.Or(o.ConfigPath, config.DefaultFile)
	o.Listen = cmp.Or(o.Listen, DefaultListen)
	o.ReadHeaderTimeout = cmp.Or(o.ReadHeaderTimeout, 5*time.Second)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, 30*time.Second)
	o.WriteTimeout = cmp.Or(o.WriteTimeout, 60*time.Second)
	o.IdleTimeout = cmp.Or(o.IdleTimeout, 120*time.Second)
	o.ShutdownTimeout = cmp.Or(o.ShutdownTimeout, 30*time.Second)
	o.RetryAfter = cmp.Or(o.RetryAfter, time.Second)
	if o.Load == nil {
		o.Load = config.Load
	}
	return o
}

// Server is the HTTP decision API (docs/HTTP-API.md): an HTTP front
// of the current runtime — a host built from the config file — which a
// reload replaces atomically. New it, then either Serve it on a listener,
// or Start it and mount Handler on an HTTP server of your own and Close it
// when done.
type Server struct {
	opts    Options
	logger  *slog.Logger
	metrics *metrics

	// evlog is the server's one writer of the event log, shared by every
	// runtime: a reload must not close it between two decisions, and one
	// Log batches the group commits of every runtime. The server closes it
	// last.
	evlog   eventlog.Appender
	dlog    *compose.DecisionLogs // exporters teed to evlog (decisionlog.go)
	logPath string
	// backends hold the event log and, with store.kind: postgres, the
	// shared store (docs/FLEET.md); store is the store: section they
	// were opened with.
	backends store.Store
	store    config.Store
	sessions session.Store
	sessPath string

	// first is the config read at start; run builds its runtime.
	first *config.Loaded
	cur   atomic.Pointer[loadedConfig]
	// reloader serialises reloads (SIGHUP, the file polled, Reload) and
	// counts and logs them; apply is its part here.
	reloader *frontend.Reloader
	// tokens are the agents' credentials, approvers the credentials of
	// POST /v1/approvals; no token is in both.
	tokens    atomic.Pointer[identity.Tokens]
	approvers atomic.Pointer[identity.Tokens]
	// ids are the auth: section's sources (OIDC, mTLS), fixed at New.
	ids *frontend.Identities
	// approvals are the approvals: section's, kept across reloads; they
	// are the Confirmer of every runtime's host.
	approvals *approval.Approvals
	// desk holds the requests approvers decide on the approval page;
	// notifier tells webhooks of each (nil: none configured).
	desk     *approval.Desk
	notifier *notify.Notifier
	// page is the approval page mounted at compose.ApprovalPagePrefix, or
	// nil (set by Serve before serving).
	page http.Handler
	// tracer exports the hosts' spans (tracing: at start); nil is off.
	tracer *compose.Tracer

	ready    atomic.Bool
	stopping atomic.Bool
	// runCtx is every request's base context; cancelled when shutdown's
	// deadline passes, so that runs still going end (inconclusive,
	// recorded) instead of being cut off unrecorded.
	runCtx     context.Context
	cancelRuns context.CancelFunc
	retiring   sync.WaitGroup
	// built is closed when the first runtime is serving or failed;
	// started says a build was started (by Start or Serve), startOnce
	// starts one only.
	built     chan struct{}
	buildErr  error
	started   atomic.Bool
	startOnce sync.Once
	closeOnce sync.Once
}

// loadedConfig is one loaded config: a host with its pipelines, serving until a
// reload retires it. Requests hold a reference while they use it; the host
// is closed once the last one lets go.
type loadedConfig struct {
	h         *host.Host
	cfg       *config.Loaded
	pipelines map[string]host.PipelineInfo
	list      []host.PipelineInfo
	maxBody   int64
	// generation counts configs: 1 for the first, one more per reload.
	generation uint64

	mu      sync.Mutex
	refs    int
	retired bool
	drained chan struct{}
}

func (rt *loadedConfig) acquire() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.retired {
		return false
	}
	rt.refs++
	return true
}

func (rt *loadedConfig) release() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.refs--
	if rt.retired && rt.refs == 0 {
		close(rt.drained)
	}
}

// retire refuses new references; drained closes when the last is released.
func (rt *loadedConfig) retire() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.retired {
		return
	}
	rt.retired = true
	if rt.refs == 0 {
		close(rt.drained)
	}
}

func (rt *loadedConfig) close() error {
	err := rt.h.Close(context.Background())
	_ = rt.cfg.Close()
	return err
}

// New reads the config (Options.Load of Options.ConfigPath), the tokens and
// the TLS files, and opens the event log: every fault an operator can fix
// is reported before anything is served. Nothing is compiled yet: Start or
// Serve builds the first runtime. Errors in how it was called (options
// that contradict each other, out of range) wrap ErrUsage; config errors
// name the file and key (config.Load). A nil logger discards.
func New(o Options, logger *slog.Logger) (*Server, error) {
	o = o.Defaults()
	if o.ApprovalTTL != 0 {
		if err := approval.CheckTTL(o.ApprovalTTL); err != nil {
			return nil, fmt.Errorf("%w: --approval-ttl %w", ErrUsage, err)
		}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: o, logger: logger, built: make(chan struct{})}
	s.runCtx, s.cancelRuns = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	s.reloader = &frontend.Reloader{Path: o.ConfigPath, Interval: o.WatchInterval, Name: "gatehost serve",
		Logger: logger, Metrics: s.metrics.Metrics, Apply: s.apply}
	if err := frontend.CheckTLS(o.TLSCert, o.TLSKey); err != nil {
		return nil, err
	}
	path := o.ConfigPath
	s.reloader.Mark()
	l, err := o.Load(path)
	if err != nil {
		return nil, err
	}
	toks, apprs, err := s.loadCredentials(l)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	s.tokens.Store(toks)
	s.approvers.Store(apprs)
	if s.ids, err = frontend.NewIdentities(context.Background(), path, l.Auth, o.TLSCert); err != nil {
		_ = l.Close()
		return nil, err
	}
	s.logPath, s.sessPath = l.LogPath, l.SessionPath
	s.sessions = l.Host.Sessions
	if s.sessions == nil {
		// Kept across reloads, so a reload loses no session.
		s.sessions = session.NewMemStore()
	}
	s.metrics.store = newStoreMetrics()
	if l.LogPath == "" && !l.Store.Postgres() {
		_ = l.Close()
		return nil, fmt.Errorf("config %s: event_log.path: required: gatehost serve records every decision", path)
	}
	// The composition root opens the store, the tracer and the
	// decision-log export; they live as long as the server, across
	// reloads, and the server closes them (Close).
	rt, err := compose.Open(context.Background(), l, compose.Options{Logger: logger, Version: serviceVersion(), ExportDecisions: true,
		Backend: compose.StoreOptions{OnCommit: s.metrics.onCommit, OnOp: s.metrics.onStoreOp}})
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	s.backends, s.tracer, s.dlog = rt.Store, rt.Tracer, rt.DecisionLogs
	s.evlog, s.store = s.backends.EventLog(), l.Store
	if s.backends.Shared() {
		s.sessions = s.backends.Sessions()
		s.metrics.registerStore(s)
	}
	if s.dlog != nil {
		s.metrics.Register(s.dlog.Collector())
	}
	if err := s.openApprovals(l); err != nil {
		_ = rt.Close()
		_ = l.Close()
		return nil, err
	}
	if s.tracer != nil {
		s.logger.Info("gatehost serve: tracing", "tracing", l.Tracing)
	}
	s.first = l
	return s, nil
}

// Listen opens a TCP listener on Options.Listen, for Serve. With no auth it
// must be loopback: checked on the address actually bound, so a host name
// cannot smuggle in another (an error wrapping ErrUsage).
func (s *Server) Listen() (net.Listener, error) {
	return frontend.Listen(s.opts.Listen, s.ids.Authed(s.tokens.Load()), s.opts.InsecureListenAny)
}

func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.runCtx },
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
}

// Serve serves Handler on ln (HTTPS with Options.TLSCert) until ctx is
// done, then shuts down gracefully: it stops accepting, lets in-flight
// runs finish within Options.ShutdownTimeout, closes every host and
// finally the event log (Close). It builds the first runtime while already
// answering /healthz (and /readyz with 503) unless Start did, and reloads
// when the config file changes (Options.WatchInterval) and on Reload.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.run(ctx, ln, nil)
}

// Start builds the first runtime — plugins compiled, pools warm — and
// returns when it serves or failed to build. Serve does it by itself; call
// Start to mount Handler on an HTTP server of your own, and Close when
// that server has shut down.
func (s *Server) Start(ctx context.Context) error {
	s.started.Store(true)
	s.startOnce.Do(func() { s.buildFirst(ctx) })
	<-s.built
	return s.buildErr
}

// Reload builds the config file's runtime beside the current one and swaps
// it in (see reload); a failed reload changes nothing and is returned. The
// CLI calls it on SIGHUP.
func (s *Server) Reload(ctx context.Context) error {
	return s.reload(ctx, "reload requested")
}

// run is Serve, reloading also on each value from hup.
func (s *Server) run(ctx context.Context, ln net.Listener, hup <-chan os.Signal) error {
	// The approval page: on ln (mounted by Handler), or on a listener of
	// its own (approvals.page.listen).
	page, err := compose.OpenApprovalPage(ctx, s.first, s.desk, s.approvers.Load, ln, s.opts.TLSCert, s.logger)
	if err != nil {
		return err
	}
	defer page.Close()
	s.page = page.Mount
	srv := s.httpServer()
	serveErr := frontend.Start(srv, ln, s.opts.TLSCert, s.opts.TLSKey, s.ids.TLSConfig)
	s.logger.Info("gatehost serve: listening", "url", frontend.Scheme(s.opts.TLSCert)+"://"+ln.Addr().String(),
		"auth", s.ids.Authed(s.tokens.Load()), "approvals", !s.approvers.Load().Empty(), "config", s.opts.ConfigPath)

	s.started.Store(true)
	go s.startOnce.Do(func() { s.buildFirst(ctx) })
	built := s.built
	published := make(chan struct{}, 1)
	s.watchStore(ctx, func() {
		select {
		case published <- struct{}{}:
		default: // a reload is already due
		}
	})
	go s.reloader.Run(ctx)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-serveErr:
			break loop
		case <-built:
			if s.buildErr != nil {
				err = s.buildErr
				break loop
			}
			built = nil // a nil channel: never again
		case <-hup:
			_ = s.reload(ctx, "SIGHUP")
		case <-published:
			_ = s.reload(ctx, "catalog published")
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, s.shutdown(srv))
}

func (s *Server) buildFirst(ctx context.Context) {
	start := time.Now()
	rt, err := s.build(ctx, s.first, nil)
	s.first = nil
	if err != nil {
		s.buildErr = err
		close(s.built)
		return
	}
	rt.generation = 1
	s.cur.Store(rt)
	s.reloader.Started()
	s.ready.Store(true)
	s.logger.Info("gatehost serve: ready", "pipelines", len(rt.list),
		"catalog_generation", rt.h.Catalog().Snapshot().Generation(), "took", time.Since(start).Round(time.Millisecond))
	close(s.built)
}

// shutdown stops accepting and waits for in-flight requests within the
// shutdown timeout; after it, runs still going are cancelled (each ends
// inconclusive and is recorded). Then every host is closed and the event
// log, whose every append was already fsynced, is closed last.
func (s *Server) shutdown(srv *http.Server) error {
	s.stopping.Store(true)
	s.ready.Store(false)
	s.reloader.Stop()
	err := frontend.Shutdown{Timeout: s.opts.ShutdownTimeout, Cancel: s.cancelRuns, Logger: s.logger, Name: "gatehost serve"}.Do(srv)
	return errors.Join(err, s.Close())
}

// Close retires the current runtime once its in-flight runs returned,
// closes every host and what the config opened, and finally the event
// log, whose every append was already fsynced. Serve closes by itself;
// call Close after New or Start when Serve was not called (shut your own
// HTTP server down first). Later calls return nil.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() { err = s.close() })
	return err
}

func (s *Server) close() error {
	s.stopping.Store(true)
	s.ready.Store(false)
	s.reloader.Stop() // no reload may start a runtime now
	if s.started.Load() {
		<-s.built
	}
	var err error
	if s.notifier != nil {
		s.notifier.Close()
	}
	if rt := s.cur.Load(); rt != nil {
		rt.retire()
		select {
		case <-rt.drained:
		case <-time.After(5 * time.Second):
			s.logger.Error("gatehost serve: runs did not return after cancellation")
		}
		err = rt.close()
	}
	if s.first != nil { // never built
		err = errors.Join(err, s.first.Close())
		s.first = nil
	}
	s.retiring.Wait()
	s.cancelRuns()
	err = errors.Join(err, s.closeDecisionLog())
	s.stopTracing()
	seq, _ := s.evlog.Last()
	err = errors.Join(err, s.backends.Close())
	s.logger.Info("gatehost serve: stopped; event log closed", "last_seq", seq)
	return err
}

// build turns a loaded config into a serving runtime beside prev: plugins
// compiled, pools warm, catalog loaded. The catalog's first generation
// continues prev's: the same generation when the catalog is unchanged, one
// more when it changed (one wholesale mutation, abi/SPEC.md §7.7).
func (s *Server) build(ctx context.Context, l *config.Loaded, prev *loadedConfig) (rt *loadedConfig, err error) {
	defer func() {
		if err != nil {
			_ = l.Close()
		}
	}()
	if l.LogPath != s.logPath {
		return nil, fmt.Errorf("config %s: event_log.path: changed from %s to %s; a reload keeps the open log (restart to move it)", l.File, s.logPath, l.LogPath)
	}
	if l.SessionPath != s.sessPath {
		return nil, fmt.Errorf("config %s: sessions.path: changed from %q to %q; a reload keeps the session store (restart to move it)", l.File, s.sessPath, l.SessionPath)
	}
	if err := s.checkStore(l); err != nil {
		return nil, err
	}
	tools, digest, err := compose.CatalogTools(ctx, l, s.backends)
	if err != nil {
		return nil, err
	}
	if l.Store.Catalog == config.CatalogPublished {
		s.logger.Info("gatehost serve: catalog from the store", "digest", digest, "tools", len(tools))
	}
	var gen uint64
	if prev != nil {
		old := prev.h.Catalog().Snapshot()
		gen = old.Generation()
		if !reflect.DeepEqual(old.List(), tools) {
			gen++
		}
	}
	store, err := catalog.NewStoreAt(gen, tools...)
	if err != nil {
		return nil, fmt.Errorf("config %s: catalog: %w", l.File, err)
	}
	cfg := l.Host
	cfg.Catalog, cfg.EventLogPath, cfg.EventLog = store, "", s.eventLog(l)
	cfg.Sessions, cfg.Logger, cfg.Hooks = s.sessions, s.logger, s.metrics.Hooks()
	cfg.Confirmer = s.approvals
	cfg.TracerProvider = s.tracerProvider(l)
	h, err := host.New(ctx, cfg)
	if err != nil {
		return nil, l.HostError(err)
	}
	if err := l.CheckToolReferences(h); err != nil {
		_ = h.Close(context.Background())
		return nil, err
	}
	if err := h.Warm(ctx); err != nil {
		_ = h.Close(context.Background())
		return nil, l.HostError(err)
	}
	rt = &loadedConfig{h: h, cfg: l, pipelines: map[string]host.PipelineInfo{}, list: h.Pipelines(), drained: make(chan struct{})}
	for _, p := range rt.list {
		rt.pipelines[p.Name] = p
	}
	rt.maxBody = s.opts.MaxBody
	if rt.maxBody == 0 {
		rt.maxBody = int64(cmp.Or(l.Host.MaxSubjectBytes, host.MaxSubjectBytes))
	}
	return rt, nil
}

// reload builds the config file's runtime beside the current one and swaps
// it in (frontend.Reloader, with apply). Runs in flight finish on the
// runtime (pipelines and pinned catalog snapshot) they started on; runs
// that start after the swap see the new one. A failed reload changes
// nothing, is logged with its cause and counted; the old config keeps
// serving.
func (s *Server) reload(ctx context.Context, trigger string) error {
	return s.reloader.Reload(ctx, trigger)
}

// apply is the server's part of a reload: the new runtime, as generation
// gen, and the tokens, swapped in together; the previous runtime is closed
// once its runs returned.
func (s *Server) apply(ctx context.Context, gen uint64) ([]any, error) {
	if s.stopping.Load() {
		return nil, frontend.ErrStopping
	}
	prev := s.cur.Load()
	if prev == nil {
		return nil, errors.New("not ready: the first config is still loading")
	}
	rt, toks, err := s.prepare(ctx, prev)
	if err != nil {
		return nil, err
	}
	rt.generation = gen
	// Config 1's rule was checked at load; a reloaded one too.
	if err := s.desk.SetRule(toks.rule); err != nil {
		rt.retire()
		_ = rt.close()
		return nil, err
	}
	s.tokens.Store(toks.agents)
	s.approvers.Store(toks.approvers)
	s.cur.Store(rt)
	s.retiring.Add(1)
	go func() {
		defer s.retiring.Done()
		prev.retire()
		<-prev.drained
		if err := prev.close(); err != nil {
			s.logger.Warn("gatehost serve: closing the previous config's host", "err", err)
		}
	}()
	return []any{"catalog_generation", rt.h.Catalog().Snapshot().Generation(), "pipelines", len(rt.list)}, nil
}

func (s *Server) prepare(ctx context.Context, prev *loadedConfig) (*loadedConfig, credentials, error) {
	l, err := s.opts.Load(s.opts.ConfigPath)
	if err != nil {
		return nil, credentials{}, err
	}
	toks, apprs, err := s.loadCredentials(l)
	if err == nil {
		err = frontend.CheckTokenSwap(s.tokens.Load(), toks)
	}
	if err != nil {
		_ = l.Close()
		return nil, credentials{}, err
	}
	if !reflect.DeepEqual(l.Auth, s.ids.Config()) {
		_ = l.Close()
		return nil, credentials{}, fmt.Errorf("config %s: auth: changed; a reload keeps the running identity sources (restart to change them)", l.File)
	}
	if err := compose.CheckApprovalsReload(prev.cfg, l); err != nil {
		_ = l.Close()
		return nil, credentials{}, err
	}
	rule, err := compose.ApprovalRule(l, apprs, s.logger)
	if err != nil {
		_ = l.Close()
		return nil, credentials{}, err
	}
	rt, err := s.build(ctx, l, prev)
	if err != nil {
		return nil, credentials{}, err
	}
	return rt, credentials{toks, apprs, rule}, nil
}

// credentials are the two token sets a reload swaps in together, and who
// may approve with them (approvals.approvers, or every approver token).
type credentials struct {
	agents, approvers *identity.Tokens
	rule              approval.Rule
}

// loadCredentials reads the agent and the approver tokens (l's
// approvals.page.approver_token_file or Options.ApproverTokenFile, read as
// every front end reads them: compose.ApproverTokens), and logs how
// sessions are bound: every fault is reported before anything is served.
func (s *Server) loadCredentials(l *config.Loaded) (*identity.Tokens, *identity.Tokens, error) {
	toks, err := identity.LoadTokens(s.opts.TokenFile, os.Getenv(TokenEnv))
	if err != nil {
		return nil, nil, err
	}
	apprs, err := compose.ApproverTokens(l, s.opts.ApproverTokenFile, toks)
	if err != nil {
		return nil, nil, err
	}
	if unbound := toks.Unbound(); toks.Len() == 1 && len(unbound) == 1 {
		s.logger.Info("gatehost serve: the only agent token has no sessions= field; it may act for any session", "token", unbound[0])
	} else if len(unbound) > 0 {
		s.logger.Warn("gatehost serve: agent tokens without a sessions= field may check only without ?session=", "tokens", unbound)
	}
	return toks, apprs, nil
}
