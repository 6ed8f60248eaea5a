package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
	"github.com/gatehost/gatehost/internal/oneline"
	"github.com/gatehost/gatehost/internal/runecut"
)

// HTTP API error codes (docs/HTTP-API.md "Errors"). Stable, snake_case.
const (
	errInvalidSubject   = "invalid_subject"
	errInvalidRequest   = "invalid_request"
	errUnknownPipeline  = "unknown_pipeline"
	errSubjectTooLarge  = "subject_too_large"
	errUnauthorized     = "unauthorized"
	errForbidden        = "forbidden"
	errSessionForbidden = "session_forbidden"
	errApprovalsOff     = "approvals_disabled"
	errTooManyApprovals = "too_many_approvals"
	errNotApprover      = "not_approver"
	errSelfApproval     = "self_approval"
	errNoRequest        = "no_approval_request"
	errAmbiguousRequest = "ambiguous_approval_request"
	errDecided          = "approval_decided"
	errHostOverloaded   = abi.ReasonHostOverloaded
	errNotReady         = "not_ready"
	errEventLogFailed   = "event_log_failed"
	errStoreFailure     = "store_failure"
	errInternal         = "internal_error"
	headerRequestID     = "X-Request-Id"
	headerConfirmation  = "X-Gatehost-Confirmation"
	headerConfigGen     = "X-Gatehost-Config-Generation"
	maxRequestIDBytes   = 128
	jsonContentType     = "application/json"
	healthContentType   = "application/json"
	metricsRoutePattern = "GET /metrics"
)

// apiError is the body of every non-200 answer of the API.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// Field names the offending input: a JSON Pointer into the
		// subject, a query parameter or a header.
		Field string `json:"field,omitempty"`
	} `json:"error"`
	RequestID string `json:"request_id,omitempty"`
	// Decision is set when a run happened but its answer is not a verdict
	// to act on (overloaded, not recorded).
	Decision *host.Decision `json:"decision,omitempty"`
}

func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/pipelines/{name}/check", s.handleCheck)
	mux.HandleFunc("GET /v1/pipelines", s.handlePipelines)
	mux.HandleFunc("POST "+approvalsRoute, s.handleMintApproval)
	mux.HandleFunc(sessionGetPattern, s.handleSessionGet)
	mux.HandleFunc(sessionActivatePattern, s.handleSessionActivate)
	mux.HandleFunc(sessionRevokePattern, s.handleSessionRevoke)
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle(metricsRoutePattern, s.metrics.Handler())
	frontend.MountResource(mux, s.ids.Resource())
	api := s.withRequestID(s.withAccessLog(s.withAuth(s.withTraceContext(mux))))
	if s.page == nil {
		return api
	}
	// The approval page signs its approvers in itself: it is not behind
	// the API's bearer tokens.
	top := http.NewServeMux()
	top.Handle(compose.ApprovalPagePrefix+"/", s.withRequestID(s.withAccessLog(s.page)))
	top.Handle("/", api)
	return top
}

type ctxKey int

const requestIDKey ctxKey = 0

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)

// withRequestID takes the caller's X-Request-Id, or makes one, and echoes
// it. An id outside [A-Za-z0-9._:/+=-]{1,128} is refused (it would go into
// logs and the event log); the refusal carries a fresh id.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(headerRequestID)
		valid := id == "" || requestIDRE.MatchString(id)
		if !valid || id == "" {
			var b [16]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(headerRequestID, id)
		r.Header.Set(headerRequestID, id)
		if !valid {
			writeError(w, r, http.StatusBadRequest, errInvalidRequest, headerRequestID,
				fmt.Sprintf("must be 1 to %d characters of A-Z a-z 0-9 . _ : / + = -", maxRequestIDBytes), nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status for the access log and metrics, and
// what a check decided.
type statusWriter struct {
	http.ResponseWriter
	status   int
	pipeline string
	verdict  abi.Verdict
	runID    string
	code     string
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap returns the wrapped ResponseWriter, so that http.ResponseController
// reaches its Flush, deadlines and full-duplex mode.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// withAccessLog logs one line per request at info: never the body, the
// subject or its arguments.
func (s *Server) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route := routeOf(r)
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		if route == "/healthz" || route == "/readyz" || route == "/metrics" {
			return // probes and scrapes would drown the log
		}
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", sw.status,
			"duration", time.Since(start).Round(time.Microsecond), "request_id", r.Header.Get(headerRequestID), "remote", r.RemoteAddr}
		if sw.pipeline != "" {
			attrs = append(attrs, "pipeline", sw.pipeline)
		}
		if sw.verdict != "" {
			attrs = append(attrs, "verdict", sw.verdict, "run_id", sw.runID)
		}
		if sw.code != "" {
			attrs = append(attrs, "error", sw.code)
		}
		s.logger.Info("http", attrs...)
	})
}

// routeOf is the route pattern for metrics labels: a bounded set, never a
// caller-chosen path.
func routeOf(r *http.Request) string {
	switch p := r.Pattern; p {
	case "POST /v1/pipelines/{name}/check":
		return "/v1/pipelines/{name}/check"
	case "GET /v1/pipelines", "GET /healthz", "GET /readyz", metricsRoutePattern:
		return strings.TrimPrefix(p, "GET ")
	case "POST " + approvalsRoute:
		return approvalsRoute
	}
	if l := sessionRouteLabel(r.Pattern); l != "" {
		return l
	}
	return "other"
}

// withAuth authenticates a request by its bearer token and tells the two
// channels apart. /v1/approvals and /v1/sessions take approver tokens only
// (403 approvals_disabled when none is configured): a person's
// confirmation, and a change to what a session may call, must come
// through a channel the agent's credential cannot use. Every other
// route but the health probes and the protected resource metadata
// (auth.resource) takes agent tokens only, when any are configured; the
// matched credential goes into the request's context for its session
// binding.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || s.isResourceMetadata(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		agents, approvers := s.tokens.Load(), s.approvers.Load()
		mine, other, otherName := agents, approvers, "an approver token"
		if isApprovalRoute(r.URL.Path) || isSessionRoute(r.URL.Path) {
			if approvers.Empty() {
				writeError(w, r, http.StatusForbidden, errApprovalsOff, "",
					"no approver token is configured (--approver-token-file or $"+ApproverTokenEnv+"); confirmations cannot be issued, nor session grants changed, over HTTP", nil)
				return
			}
			mine, other, otherName = approvers, agents, "an agent token"
		} else if !s.ids.Authed(agents) {
			next.ServeHTTP(w, r)
			return
		}
		tok, ok := identity.Bearer(r)
		if mine == agents && (!ok || other.Lookup(tok) == nil) {
			// Agent routes: every configured source (tokens, OIDC, mTLS).
			if r = s.authenticateAgent(w, r); r != nil {
				next.ServeHTTP(w, r)
			}
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehost"`)
			writeError(w, r, http.StatusUnauthorized, errUnauthorized, "Authorization", "a bearer token is required", nil)
			return
		}
		c := mine.Lookup(tok)
		if c == nil {
			if other.Lookup(tok) != nil {
				writeError(w, r, http.StatusForbidden, errForbidden, "Authorization",
					otherName+" may not use this route: agents check, approvers approve", nil)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehost", error="invalid_token"`)
			writeError(w, r, http.StatusUnauthorized, errUnauthorized, "Authorization", "the bearer token is not valid", nil)
			return
		}
		next.ServeHTTP(w, r.WithContext(withCredential(r.Context(), c)))
	})
}

// isResourceMetadata reports whether path is one of auth.resource's
// metadata routes (frontend.MountResource), which take no credential.
func (s *Server) isResourceMetadata(path string) bool {
	res := s.ids.Resource()
	return res != nil && (path == identity.WellKnownResource || path == res.MetadataPath())
}

// acquire returns the current runtime with a reference held, or nil before
// the first config is ready and after shutdown began.
func (s *Server) acquire() *loadedConfig {
	for {
		rt := s.cur.Load()
		if rt == nil {
			return nil
		}
		if rt.acquire() {
			return rt
		}
		if s.stopping.Load() {
			return nil
		}
		// rt was retired between the load and acquire: a reload swapped
		// in its successor, which the next load sees.
	}
}

// subjectRequest is what the check and approval routes read before the
// host sees the subject: the runtime (held: the caller releases it), the
// pipeline, the session, the format and the raw body.
type subjectRequest struct {
	rt      *loadedConfig
	name    string
	info    host.PipelineInfo
	session string
	format  subject.Format
	body    []byte
}

// openSubjectRequest answers what the check and approval routes refuse
// alike before the subject is read: no runtime (503), no pipeline name
// (404, the field nameField), a malformed session id (400), what admit
// refuses (admit answers it), a body over the cap (413). It returns nil
// once it has answered. The format is the host's to judge (Check and
// NativeSubject refuse an unknown one).
func (s *Server) openSubjectRequest(w http.ResponseWriter, r *http.Request, name, nameField string,
	admit func(info host.PipelineInfo, sess string) bool) *subjectRequest {
	rt := s.acquireOr503(w, r)
	if rt == nil {
		return nil
	}
	ok := false
	defer func() {
		if !ok {
			rt.release()
		}
	}()
	w.Header().Set(headerConfigGen, strconv.FormatUint(rt.generation, 10))
	info, found := rt.pipelines[name]
	if !found {
		writeError(w, r, http.StatusNotFound, errUnknownPipeline, nameField, fmt.Sprintf("no pipeline %q", cut(name, 64)), nil)
		return nil
	}
	if sw, isSW := w.(*statusWriter); isSW {
		sw.pipeline = name
	}
	q := r.URL.Query()
	sess := q.Get("session")
	if sess != "" && !session.ValidID(sess) {
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "session",
			fmt.Sprintf("want 1 to %d bytes of A-Z a-z 0-9 _ . : -", session.MaxIDBytes), nil)
		return nil
	}
	if !admit(info, sess) {
		return nil
	}
	body, read := readBody(w, r, rt.maxBody)
	if !read {
		return nil
	}
	ok = true
	return &subjectRequest{rt: rt, name: name, info: info, session: sess, format: subject.Format(q.Get("format")), body: body}
}

// writeInputError answers the errors Check and NativeSubject refuse an
// input or its options with, before any run: 400 naming the field (the
// format, the confirmation header, or a JSON Pointer into the subject),
// 404 for a pipeline gone, 503 for a host closing. It reports whether err
// was one of them.
func (s *Server) writeInputError(w http.ResponseWriter, r *http.Request, err error) bool {
	var oe *host.OptionError
	var se *host.SubjectError
	switch {
	case errors.As(err, &oe) && oe.Field == "Format":
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "format", oneline.Of(oe.Reason), nil)
	case errors.As(err, &oe) && oe.Field == "ConfirmationToken":
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, headerConfirmation, oneline.Of(oe.Reason), nil)
	case errors.As(err, &se):
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, se.Pointer, oneline.Of(err.Error()), nil)
	case errors.Is(err, host.ErrBadSubject):
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "", oneline.Of(err.Error()), nil)
	case errors.Is(err, host.ErrUnknownPipeline):
		writeError(w, r, http.StatusNotFound, errUnknownPipeline, "name", err.Error(), nil)
	case errors.Is(err, host.ErrClosed):
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errNotReady, "", err.Error(), nil)
	default:
		return false
	}
	return true
}

func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	if sw, ok := w.(*statusWriter); ok {
		defer func() { sw.code = w.Header().Get("X-Gatehost-Error") }()
	}
	// The session is the credential's to name, not the caller's to choose:
	// another session's grants are another agent's.
	sr := s.openSubjectRequest(w, r, r.PathValue("name"), "name", func(_ host.PipelineInfo, sess string) bool {
		if c := credentialOf(r.Context()); c != nil && !c.Allows(sess) {
			writeError(w, r, http.StatusForbidden, errSessionForbidden, "session",
				fmt.Sprintf("this bearer token may not act for session %q; the sessions= field of its token-file line lists the ones it may", sess), nil)
			return false
		}
		return true
	})
	if sr == nil {
		return
	}
	defer sr.rt.release()
	name := sr.name
	// A waiver is an operator's audited permission. Over HTTP the caller
	// may be the agent itself, so a merge subject may not carry one here:
	// waivers come from the operator, through gatehost merge-verify --waiver.
	// A merge subject is native JSON only, so the body is the subject.
	if sr.info.Subject == abi.SubjectMerge && carriesWaiver(sr.body) {
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "/waiver",
			"a merge subject sent over HTTP may not carry a waiver: waivers are the operator's (gatehost merge-verify --waiver)", nil)
		return
	}
	// A blank header confirms nothing: it is what a missing one looks like.
	// Any other value is resolved by the host, on the run's own catalog
	// snapshot, against the approvals minted through POST /v1/approvals
	// (s.approvals); a value the caller made up confirms nothing.
	opts := host.RunOptions{Format: sr.format, Session: sr.session, RequestID: r.Header.Get(headerRequestID),
		ConfirmationToken: strings.TrimSpace(r.Header.Get(headerConfirmation))}
	opts.Principal, _ = identity.FromContext(r.Context())
	d, err := sr.rt.h.Check(r.Context(), name, sr.body, opts)
	var ask *approvalView
	if err == nil && d != nil && d.Verdict == abi.Rejected && opts.ConfirmationToken == "" && d.OnlyConfirmationMissing() {
		d, ask, err = s.askApproval(r.Context(), sr.rt, sr, opts, d)
	}
	switch {
	case errors.Is(err, host.ErrConfirmation) && errors.Is(err, approval.ErrStore):
		s.logger.Error("gatehost serve: approval store failed; not run", "pipeline", name, "request_id", opts.RequestID, "err", err)
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errStoreFailure, "", "the approval store failed (the server's log has the cause); the call was not checked", nil)
		return
	case errors.Is(err, host.ErrConfirmation):
		s.logger.Error("gatehost serve: approval use not recorded; not run", "pipeline", name, "request_id", opts.RequestID, "err", err)
		writeError(w, r, http.StatusInternalServerError, errEventLogFailed, "", "the confirmation's use could not be recorded; the call was not checked", nil)
		return
	case d == nil && s.writeInputError(w, r, err):
		return
	case d == nil:
		s.logger.Error("gatehost serve: check failed", "pipeline", name, "request_id", opts.RequestID, "err", err)
		writeError(w, r, http.StatusInternalServerError, errInternal, "", "the check could not run", nil)
		return
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.verdict, sw.runID = d.Verdict, d.RunID
	}
	setTraceResponse(w, d)
	switch {
	case err != nil: // ErrEventLog: unaudited, so forced inconclusive
		writeError(w, r, http.StatusInternalServerError, errEventLogFailed, "", "the decision could not be recorded; it is inconclusive", d)
	case overloaded(d):
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errHostOverloaded, "", "too many runs in progress; retry later", d)
	default:
		writeJSON(w, http.StatusOK, checkAnswer{Decision: d, Approval: ask})
	}
}

// carriesWaiver reports whether body, a native merge subject, has a
// non-null waiver member. A body that is not a JSON object carries none;
// the host refuses it as a subject.
func carriesWaiver(body []byte) bool {
	var m struct {
		Waiver json.RawMessage `json:"waiver"`
	}
	return json.Unmarshal(body, &m) == nil && len(m.Waiver) > 0 && string(m.Waiver) != "null"
}

// overloaded: the run was inconclusive because an enforcing stage found no
// capacity (run admission or instance pool), not because of the subject.
func overloaded(d *host.Decision) bool {
	if d.Verdict != abi.Inconclusive {
		return false
	}
	for _, st := range d.Stages {
		if st.Mode == host.Enforce && st.Reason == abi.ReasonHostOverloaded {
			return true
		}
	}
	return false
}

// acquireOr503 is acquire for a handler: with no runtime to serve (the
// server is starting or shutting down) it answers 503 with Retry-After and
// returns nil.
func (s *Server) acquireOr503(w http.ResponseWriter, r *http.Request) *loadedConfig {
	rt := s.acquire()
	if rt == nil {
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errNotReady, "", "the server is starting or shutting down", nil)
	}
	return rt
}

func (s *Server) handlePipelines(w http.ResponseWriter, r *http.Request) {
	rt := s.acquireOr503(w, r)
	if rt == nil {
		return
	}
	defer rt.release()
	writeJSON(w, http.StatusOK, map[string]any{
		"pipelines":          rt.list,
		"config_generation":  rt.generation,
		"catalog_generation": rt.h.Catalog().Snapshot().Generation(),
	})
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", healthContentType)
	_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
}

// handleReady answers 200 once the first config's plugins are compiled and
// their pools warm, and 503 before that and from the start of shutdown.
func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", healthContentType)
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"not_ready"}`+"\n")
		return
	}
	if !s.storeReady() {
		// Decisions would be inconclusive: send traffic elsewhere.
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"not_ready","reason":"store_unavailable"}`+"\n")
		return
	}
	_, _ = io.WriteString(w, `{"status":"ready"}`+"\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"encoding the answer"}}`)
	}
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, r *http.Request, status int, code, field, msg string, d *host.Decision) {
	var e apiError
	e.Error.Code, e.Error.Message, e.Error.Field = code, msg, field
	e.RequestID = r.Header.Get(headerRequestID)
	e.Decision = d
	w.Header().Set("X-Gatehost-Error", code)
	writeJSON(w, status, e)
}

// cut shortens s for an error message, on a rune boundary.
func cut(s string, n int) string { return runecut.Cut(s, n, "...") }

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}
