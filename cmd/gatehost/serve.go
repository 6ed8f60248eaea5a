package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
)

// defaultListen is loopback: with no auth configured nothing else is
// allowed without --insecure-listen-any.
const defaultListen = "127.0.0.1:8490"

// serveOptions are serve's flags.
type serveOptions struct {
	configPath        string
	listen            string
	insecureListenAny bool
	tokenFile         string
	tlsCert, tlsKey   string
	// maxBody caps a request body; 0 means the config's max_subject_bytes.
	maxBody           int64
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	shutdownTimeout   time.Duration
	// watchInterval is how often the config file is polled for a change;
	// 0 turns watching off (SIGHUP still reloads).
	watchInterval time.Duration
	retryAfter    time.Duration
	// approverTokenFile holds the tokens of POST /v1/approvals.
	approverTokenFile string
	// approvalTTL is how long a minted approval stays usable; 0 means
	// defaultApprovalTTL.
	approvalTTL time.Duration
	// now is the clock of approvals (minting, expiry); nil means time.Now.
	now func() time.Time
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.configPath, "config", "", "config file (default ./gatehost.yaml)")
	fs.StringVar(&o.listen, "listen", defaultListen, "address to listen on, host:port")
	fs.BoolVar(&o.insecureListenAny, "insecure-listen-any", false, "allow a non-loopback address without auth")
	fs.StringVar(&o.tokenFile, "token-file", "", "file of agent bearer tokens, one a line, each optionally bound with sessions=ID,... (also $"+tokenEnv+"); none means no auth")
	fs.StringVar(&o.approverTokenFile, "approver-token-file", "", "file of approver bearer tokens, the only credentials POST /v1/approvals takes (also $"+approverTokenEnv+"); none means no confirmation over HTTP")
	fs.DurationVar(&o.approvalTTL, "approval-ttl", defaultApprovalTTL, "how long a minted approval stays usable (1s to 24h)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	maxBody := fs.String("max-body", "", "request body cap, such as 4MiB (default: the config's max_subject_bytes)")
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", 5*time.Second, "time to read a request's headers")
	fs.DurationVar(&o.readTimeout, "read-timeout", 30*time.Second, "time to read a whole request")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 60*time.Second, "time from the end of the request's headers to the end of the answer")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 120*time.Second, "keep-alive idle time")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "time in-flight runs get to finish on shutdown")
	fs.DurationVar(&o.watchInterval, "watch-interval", 2*time.Second, "how often to check the config file for a change (0: only SIGHUP reloads)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	logJSON := fs.Bool("log-json", false, "log JSON lines instead of text")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gatehost serve [flags]")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, exactly(0)); done {
		return code
	}
	if o.approvalTTL < time.Second || o.approvalTTL > maxApprovalTTL {
		return fail(stderr, fmt.Errorf("%w: --approval-ttl %s: want 1s to %s", errUsage, o.approvalTTL, maxApprovalTTL))
	}
	if *maxBody != "" {
		n, err := config.ParseSize(*maxBody)
		if err != nil || n == 0 {
			return fail(stderr, fmt.Errorf("%w: --max-body %q: want a positive size", errUsage, *maxBody))
		}
		o.maxBody = int64(min(n, 1<<40))
	}
	logger, err := newLogger(stderr, *logLevel, *logJSON)
	if err != nil {
		return fail(stderr, err)
	}
	o.retryAfter = time.Second
	s, err := newServer(o, logger)
	if err != nil {
		return fail(stderr, err)
	}
	ln, err := s.listen()
	if err != nil {
		s.closeLog()
		return fail(stderr, err)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := s.run(ctx, ln, hup); err != nil {
		return fail(stderr, err)
	}
	return 0
}

// server is gatehost serve: an HTTP front of the current runtime, which a
// reload replaces atomically.
type server struct {
	opts    serveOptions
	logger  *slog.Logger
	metrics *metrics

	// evlog is the one writer of the event log, shared by every runtime:
	// the log's lock admits one writer per file, and a reload must not
	// close it between two decisions. The server closes it last.
	evlog    *eventlog.Log
	logPath  string
	sessions session.Store
	sessPath string

	// first is the config read at start; run builds its runtime.
	first *config.Loaded
	cur   atomic.Pointer[loadedConfig]
	// reloadMu serialises reloads; configDigest is the last config file
	// content a reload tried, so a bad file is not retried every poll.
	reloadMu     sync.Mutex
	configDigest [32]byte
	// tokens are the agents' credentials, approvers the credentials of
	// POST /v1/approvals; no token is in both.
	tokens    atomic.Pointer[tokenSet]
	approvers atomic.Pointer[tokenSet]
	// approvals live in this process's memory, across reloads.
	approvals *approvalStore

	ready    atomic.Bool
	stopping atomic.Bool
	// runCtx is every request's base context; cancelled when shutdown's
	// deadline passes, so that runs still going end (inconclusive,
	// recorded) instead of being cut off unrecorded.
	runCtx     context.Context
	cancelRuns context.CancelFunc
	retiring   sync.WaitGroup
	// built is closed when the first runtime is serving or failed.
	built    chan struct{}
	buildErr error
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

// newServer reads the config, the tokens and the TLS files, and opens the
// event log: every fault an operator can fix is reported before listening.
func newServer(o serveOptions, logger *slog.Logger) (*server, error) {
	s := &server{opts: o, logger: logger, built: make(chan struct{}), approvals: newApprovalStore()}
	s.runCtx, s.cancelRuns = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	toks, apprs, err := s.loadCredentials()
	if err != nil {
		return nil, err
	}
	s.tokens.Store(toks)
	s.approvers.Store(apprs)
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}
	if o.tlsCert != "" {
		if _, err := loadKeyPair(o.tlsCert, o.tlsKey); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	path := cmp.Or(o.configPath, config.DefaultFile)
	s.opts.configPath = path
	if b, err := config.ReadFile(path); err == nil {
		s.configDigest = sha256.Sum256(b)
	}
	l, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	s.logPath, s.sessPath = l.LogPath, l.SessionPath
	s.sessions = l.Host.Sessions
	if s.sessions == nil {
		// Kept across reloads, so a reload loses no session.
		s.sessions = session.NewMemStore()
	}
	s.evlog, err = eventlog.Open(l.LogPath, eventlog.Options{Logger: logger, OnCommit: s.metrics.onCommit})
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("config %s: event_log.path: %w", path, err)
	}
	s.first = l
	return s, nil
}

func (s *server) closeLog() {
	if s.first != nil {
		_ = s.first.Close()
	}
	_ = s.evlog.Close()
}

// listen opens the listener. With no auth it must be loopback: checked on
// the address actually bound, so a host name cannot smuggle in another.
func (s *server) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.opts.listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", s.opts.listen, err)
	}
	if s.tokens.Load().empty() && !s.opts.insecureListenAny {
		if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
			ln.Close()
			return nil, fmt.Errorf("%w: --listen %s is not a loopback address and no bearer token is configured (--token-file or $%s); pass --insecure-listen-any to serve it unauthenticated anyway",
				errUsage, s.opts.listen, tokenEnv)
		}
	}
	return ln, nil
}

func (s *server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: s.opts.readHeaderTimeout,
		ReadTimeout:       s.opts.readTimeout,
		WriteTimeout:      s.opts.writeTimeout,
		IdleTimeout:       s.opts.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.runCtx },
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
}

// run serves on ln until ctx is done, then shuts down gracefully: it stops
// accepting, lets in-flight runs finish within the shutdown timeout,
// closes every host and finally the event log. It builds the first
// runtime while already answering /healthz (and /readyz with 503), and
// reloads on hup and on a change of the config file.
func (s *server) run(ctx context.Context, ln net.Listener, hup <-chan os.Signal) error {
	srv := s.httpServer()
	serveErr := make(chan error, 1)
	go func() {
		var err error
		if s.opts.tlsCert != "" {
			var pair tls.Certificate
			if pair, err = loadKeyPair(s.opts.tlsCert, s.opts.tlsKey); err == nil {
				srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
				err = srv.ServeTLS(ln, "", "")
			}
		} else {
			err = srv.Serve(ln)
		}
		serveErr <- err
	}()
	scheme := "http"
	if s.opts.tlsCert != "" {
		scheme = "https"
	}
	s.logger.Info("gatehost serve: listening", "url", scheme+"://"+ln.Addr().String(),
		"auth", !s.tokens.Load().empty(), "approvals", !s.approvers.Load().empty(), "config", s.opts.configPath)

	go s.buildFirst(ctx)
	var watch <-chan time.Time
	if s.opts.watchInterval > 0 {
		t := time.NewTicker(s.opts.watchInterval)
		defer t.Stop()
		watch = t.C
	}
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-serveErr:
			break loop
		case <-s.built:
			if s.buildErr != nil {
				err = s.buildErr
				break loop
			}
			s.built = nil // a nil channel: never again
		case <-hup:
			_ = s.reload(ctx, "SIGHUP")
		case <-watch:
			s.reloadIfChanged(ctx)
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, s.shutdown(srv))
}

func (s *server) buildFirst(ctx context.Context) {
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
	s.metrics.configGeneration.Set(1)
	s.ready.Store(true)
	s.logger.Info("gatehost serve: ready", "pipelines", len(rt.list),
		"catalog_generation", rt.h.Catalog().Snapshot().Generation(), "took", time.Since(start).Round(time.Millisecond))
	close(s.built)
}

// shutdown stops accepting and waits for in-flight requests within the
// shutdown timeout; after it, runs still going are cancelled (each ends
// inconclusive and is recorded). Then every host is closed and the event
// log, whose every append was already fsynced, is closed last.
func (s *server) shutdown(srv *http.Server) error {
	s.stopping.Store(true)
	s.ready.Store(false)
	s.logger.Info("gatehost serve: shutting down", "deadline", s.opts.shutdownTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		s.logger.Warn("gatehost serve: shutdown deadline passed; cancelling the runs still going", "err", err)
		s.cancelRuns()
		_ = srv.Close()
		err = nil
	}
	s.reloadMu.Lock() // no reload may start a runtime now
	defer s.reloadMu.Unlock()
	if <-s.builtOrNil(); s.cur.Load() != nil {
		rt := s.cur.Load()
		rt.retire()
		select {
		case <-rt.drained:
		case <-time.After(5 * time.Second):
			s.logger.Error("gatehost serve: runs did not return after cancellation")
		}
		err = errors.Join(err, rt.close())
	}
	s.retiring.Wait()
	s.cancelRuns()
	seq, _ := s.evlog.Last()
	err = errors.Join(err, s.evlog.Close())
	s.logger.Info("gatehost serve: stopped; event log closed", "last_seq", seq)
	return err
}

// builtOrNil waits for the first build to finish, if one is under way.
func (s *server) builtOrNil() <-chan struct{} {
	if s.built == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return s.built
}

// build turns a loaded config into a serving runtime beside prev: plugins
// compiled, pools warm, catalog loaded. The catalog's first generation
// continues prev's: the same generation when the catalog is unchanged, one
// more when it changed (one wholesale mutation, abi/SPEC.md §7.7).
func (s *server) build(ctx context.Context, l *config.Loaded, prev *loadedConfig) (rt *loadedConfig, err error) {
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
	next := l.Host.Catalog.Snapshot()
	var gen uint64
	if prev != nil {
		old := prev.h.Catalog().Snapshot()
		gen = old.Generation()
		if !reflect.DeepEqual(old.List(), next.List()) {
			gen++
		}
	}
	store, err := catalog.NewStoreAt(gen, next.List()...)
	if err != nil {
		return nil, fmt.Errorf("config %s: catalog: %w", l.File, err)
	}
	cfg := l.Host
	cfg.Catalog, cfg.EventLogPath, cfg.EventLog = store, "", s.evlog
	cfg.Sessions, cfg.Logger, cfg.Hooks = s.sessions, s.logger, s.metrics.hooks()
	h, err := host.New(ctx, cfg)
	if err != nil {
		return nil, l.HostError(err)
	}
	if err := h.Warm(ctx); err != nil {
		_ = h.Close(context.Background())
		return nil, l.HostError(err)
	}
	rt = &loadedConfig{h: h, cfg: l, pipelines: map[string]host.PipelineInfo{}, list: h.Pipelines(), drained: make(chan struct{})}
	for _, p := range rt.list {
		rt.pipelines[p.Name] = p
	}
	rt.maxBody = s.opts.maxBody
	if rt.maxBody == 0 {
		rt.maxBody = int64(cmp.Or(l.Host.MaxSubjectBytes, host.MaxSubjectBytes))
	}
	return rt, nil
}

// reload builds the config file's runtime beside the current one and swaps
// it in. Runs in flight finish on the runtime (pipelines and pinned catalog
// snapshot) they started on; runs that start after the swap see the new
// one. A failed reload changes nothing, is logged with its cause and
// counted; the old config keeps serving.
func (s *server) reload(ctx context.Context, trigger string) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.stopping.Load() {
		return errors.New("shutting down")
	}
	prev := s.cur.Load()
	if prev == nil {
		return errors.New("not ready: the first config is still loading")
	}
	start := time.Now()
	if b, err := config.ReadFile(s.opts.configPath); err == nil {
		s.configDigest = sha256.Sum256(b)
	}
	rt, toks, err := s.prepare(ctx, prev)
	if err != nil {
		s.metrics.reloads.WithLabelValues("failure").Inc()
		s.logger.Error("gatehost serve: reload failed; the previous config keeps serving",
			"trigger", trigger, "config", s.opts.configPath, "config_generation", prev.generation, "err", err)
		return err
	}
	rt.generation = prev.generation + 1
	s.tokens.Store(toks.agents)
	s.approvers.Store(toks.approvers)
	s.cur.Store(rt)
	s.metrics.reloads.WithLabelValues("success").Inc()
	s.metrics.configGeneration.Set(float64(rt.generation))
	s.metrics.lastReload.SetToCurrentTime()
	s.logger.Info("gatehost serve: config reloaded", "trigger", trigger, "config_generation", rt.generation,
		"catalog_generation", rt.h.Catalog().Snapshot().Generation(), "pipelines", len(rt.list),
		"took", time.Since(start).Round(time.Millisecond))
	s.retiring.Add(1)
	go func() {
		defer s.retiring.Done()
		prev.retire()
		<-prev.drained
		if err := prev.close(); err != nil {
			s.logger.Warn("gatehost serve: closing the previous config's host", "err", err)
		}
	}()
	return nil
}

func (s *server) prepare(ctx context.Context, prev *loadedConfig) (*loadedConfig, credentials, error) {
	toks, apprs, err := s.loadCredentials()
	if err != nil {
		return nil, credentials{}, err
	}
	if toks.empty() != s.tokens.Load().empty() {
		// Turning auth off would expose a listener bound for auth.
		return nil, credentials{}, errors.New("auth: a reload cannot turn bearer-token auth on or off; restart")
	}
	l, err := config.Load(s.opts.configPath)
	if err != nil {
		return nil, credentials{}, err
	}
	rt, err := s.build(ctx, l, prev)
	if err != nil {
		return nil, credentials{}, err
	}
	return rt, credentials{toks, apprs}, nil
}

// credentials are the two token sets a reload swaps in together.
type credentials struct{ agents, approvers *tokenSet }

// loadCredentials reads the agent and the approver tokens, and logs how
// sessions are bound: every fault is reported before anything is served.
func (s *server) loadCredentials() (*tokenSet, *tokenSet, error) {
	toks, err := loadTokens(s.opts.tokenFile, os.Getenv(tokenEnv))
	if err != nil {
		return nil, nil, err
	}
	apprs, err := loadApproverTokens(s.opts.approverTokenFile, os.Getenv(approverTokenEnv), toks)
	if err != nil {
		return nil, nil, err
	}
	if unbound := toks.unbound(); len(toks.creds) == 1 && len(unbound) == 1 {
		s.logger.Info("gatehost serve: the only agent token has no sessions= field; it may act for any session", "token", unbound[0])
	} else if len(unbound) > 0 {
		s.logger.Warn("gatehost serve: agent tokens without a sessions= field may check only without ?session=", "tokens", unbound)
	}
	return toks, apprs, nil
}

// reloadIfChanged reloads when the config file's content differs from what
// the last reload read.
func (s *server) reloadIfChanged(ctx context.Context) {
	b, err := config.ReadFile(s.opts.configPath)
	if err != nil {
		return // a rename-in-progress; the next poll sees the new file
	}
	s.reloadMu.Lock()
	same := sha256.Sum256(b) == s.configDigest
	s.reloadMu.Unlock()
	if !same {
		_ = s.reload(ctx, "config file changed")
	}
}
