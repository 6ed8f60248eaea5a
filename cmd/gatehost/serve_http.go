package main

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
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
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/subject"
)

// HTTP API error codes (README "gatehost serve"). Stable, snake_case.
const (
	errInvalidSubject   = "invalid_subject"
	errInvalidRequest   = "invalid_request"
	errUnknownPipeline  = "unknown_pipeline"
	errSubjectTooLarge  = "subject_too_large"
	errUnauthorized     = "unauthorized"
	errHostOverloaded   = abi.ReasonHostOverloaded
	errNotReady         = "not_ready"
	errEventLogFailed   = "event_log_failed"
	errInternal         = "internal_error"
	headerRequestID     = "X-Request-Id"
	headerConfirmation  = "X-Gatehost-Confirmation"
	headerConfigGen     = "X-Gatehost-Config-Generation"
	minTokenBytes       = 16
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

// tokenSet holds the SHA-256 of each accepted bearer token. Comparing
// digests of equal length, with subtle.ConstantTimeCompare, against every
// token without stopping at a match, makes the time of a check independent
// of how much of a guess is right, of its length, and of which token
// matched.
type tokenSet struct{ sums [][sha256.Size]byte }

func (t *tokenSet) empty() bool { return t == nil || len(t.sums) == 0 }

// match reports whether given is one of the tokens, in constant time.
func (t *tokenSet) match(given string) bool {
	sum := sha256.Sum256([]byte(given))
	ok := 0
	for i := range t.sums {
		ok |= subtle.ConstantTimeCompare(sum[:], t.sums[i][:])
	}
	return ok == 1
}

// loadTokens reads tokens from file (one a line; blank lines and lines
// starting with # ignored) and from env (separated by commas or newlines).
// A token shorter than 16 bytes is refused: it could be guessed.
func loadTokens(file, env string) (*tokenSet, error) {
	var raw []string
	if file != "" {
		b, err := readTokenFile(file)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				raw = append(raw, line)
			}
		}
		if len(raw) == 0 {
			return nil, fmt.Errorf("--token-file %s: no token in it", file)
		}
	}
	for _, tok := range strings.FieldsFunc(env, func(r rune) bool { return r == ',' || r == '\n' }) {
		if tok = strings.TrimSpace(tok); tok != "" {
			raw = append(raw, tok)
		}
	}
	t := &tokenSet{}
	for i, tok := range raw {
		if len(tok) < minTokenBytes {
			return nil, fmt.Errorf("bearer token %d: %d bytes; at least %d are required", i+1, len(tok), minTokenBytes)
		}
		t.sums = append(t.sums, sha256.Sum256([]byte(tok)))
	}
	return t, nil
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/pipelines/{name}/check", s.handleCheck)
	mux.HandleFunc("GET /v1/pipelines", s.handlePipelines)
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle(metricsRoutePattern, s.metrics.handler())
	return s.withRequestID(s.withAccessLog(s.withAuth(mux)))
}

type ctxKey int

const requestIDKey ctxKey = 0

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)

// withRequestID takes the caller's X-Request-Id, or makes one, and echoes
// it. An id outside [A-Za-z0-9._:/+=-]{1,128} is refused (it would go into
// logs and the event log); the refusal carries a fresh id.
func (s *server) withRequestID(next http.Handler) http.Handler {
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

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// withAccessLog logs one line per request at info: never the body, the
// subject or its arguments.
func (s *server) withAccessLog(next http.Handler) http.Handler {
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
	}
	return "other"
}

// withAuth requires a bearer token, when tokens are configured, on every
// route but the health probes.
func (s *server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toks := s.tokens.Load()
		if toks.empty() || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehost"`)
			writeError(w, r, http.StatusUnauthorized, errUnauthorized, "Authorization", "a bearer token is required", nil)
			return
		}
		if !toks.match(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehost", error="invalid_token"`)
			writeError(w, r, http.StatusUnauthorized, errUnauthorized, "Authorization", "the bearer token is not valid", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// acquire returns the current runtime with a reference held, or nil before
// the first config is ready and after shutdown began.
func (s *server) acquire() *loadedConfig {
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

func (s *server) handleCheck(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if sw, ok := w.(*statusWriter); ok {
		defer func() { sw.code = w.Header().Get("X-Gatehost-Error") }()
	}
	rt := s.acquire()
	if rt == nil {
		w.Header().Set("Retry-After", retryAfter(s.opts.retryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errNotReady, "", "the server is starting or shutting down", nil)
		return
	}
	defer rt.release()
	w.Header().Set(headerConfigGen, strconv.FormatUint(rt.generation, 10))
	info, ok := rt.pipelines[name]
	if !ok {
		writeError(w, r, http.StatusNotFound, errUnknownPipeline, "name", fmt.Sprintf("no pipeline %q", name), nil)
		return
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.pipeline = name
	}
	q := r.URL.Query()
	format := q.Get("format")
	switch subject.Format(format) {
	case subject.FormatAuto, subject.FormatNative, subject.FormatMCP, subject.FormatOpenAI, subject.FormatAnthropic:
	default:
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "format", fmt.Sprintf("%q is not native, mcp, openai or anthropic", format), nil)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rt.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, r, http.StatusRequestEntityTooLarge, errSubjectTooLarge, "",
				fmt.Sprintf("the body exceeds the cap of %d bytes", mbe.Limit), nil)
			return
		}
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "", "reading the body: "+err.Error(), nil)
		return
	}
	native, conf, field, err := nativeSubject(rt.h, info.Subject, body, subject.Format(format), r.Header.Get(headerConfirmation))
	if err != nil {
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, field, oneLine(err.Error()), nil)
		return
	}
	// A waiver is an operator's audited permission. Over HTTP the caller
	// may be the agent itself, so a merge subject may not carry one here:
	// waivers come from the operator, through gatehost merge-verify --waiver.
	if info.Subject == abi.SubjectMerge {
		var m struct {
			Waiver json.RawMessage `json:"waiver"`
		}
		if json.Unmarshal(native, &m) == nil && len(m.Waiver) > 0 && string(m.Waiver) != "null" {
			writeError(w, r, http.StatusBadRequest, errInvalidSubject, "/waiver",
				"a merge subject sent over HTTP may not carry a waiver: waivers are the operator's (gatehost merge-verify --waiver)", nil)
			return
		}
	}
	opts := host.RunOptions{Session: q.Get("session"), RequestID: r.Header.Get(headerRequestID), Confirmation: conf}
	d, err := rt.h.Check(r.Context(), name, native, opts)
	switch {
	case errors.Is(err, host.ErrBadSubject):
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "", oneLine(err.Error()), nil)
		return
	case errors.Is(err, host.ErrUnknownPipeline):
		writeError(w, r, http.StatusNotFound, errUnknownPipeline, "name", err.Error(), nil)
		return
	case errors.Is(err, host.ErrClosed):
		w.Header().Set("Retry-After", retryAfter(s.opts.retryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errNotReady, "", err.Error(), nil)
		return
	case d == nil:
		s.logger.Error("gatehost serve: check failed", "pipeline", name, "request_id", opts.RequestID, "err", err)
		writeError(w, r, http.StatusInternalServerError, errInternal, "", "the check could not run", nil)
		return
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.verdict, sw.runID = d.Verdict, d.RunID
	}
	switch {
	case err != nil: // ErrEventLog: unaudited, so forced inconclusive
		writeError(w, r, http.StatusInternalServerError, errEventLogFailed, "", "the decision could not be recorded; it is inconclusive", d)
	case overloaded(d):
		w.Header().Set("Retry-After", retryAfter(s.opts.retryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errHostOverloaded, "", "too many runs in progress; retry later", d)
	default:
		writeJSON(w, http.StatusOK, d)
	}
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

// nativeSubject converts body, in any supported format, to the native JSON
// of kind, as gatehost check does. field is a JSON Pointer into body (or a
// header name) for errors.
func nativeSubject(h *host.Host, kind abi.SubjectKind, body []byte, f subject.Format, confirm string) (native []byte, conf *abi.Confirmation, field string, err error) {
	if confirm != "" && kind != abi.SubjectToolCall {
		return nil, nil, headerConfirmation, fmt.Errorf("applies to tool_call pipelines only")
	}
	switch kind {
	case abi.SubjectToolCall:
		call, _, err := subject.ParseToolCall(body, f)
		if err != nil {
			return nil, nil, subjectField(err), err
		}
		native, err = json.Marshal(call)
		return native, confirmationFor(h, call.Tool, confirm), "", err
	case abi.SubjectProposal:
		p, _, err := subject.ParseProposal(body, f)
		if err != nil {
			return nil, nil, subjectField(err), err
		}
		native, err = json.Marshal(p)
		return native, nil, "", err
	}
	if f != subject.FormatAuto && f != subject.FormatNative {
		return nil, nil, "format", fmt.Errorf("%s applies to proposals and tool calls only", f)
	}
	return body, nil, "", nil
}

func subjectField(err error) string {
	var se *subject.Error
	if errors.As(err, &se) {
		return se.Field
	}
	return ""
}

func (s *server) handlePipelines(w http.ResponseWriter, r *http.Request) {
	rt := s.acquire()
	if rt == nil {
		w.Header().Set("Retry-After", retryAfter(s.opts.retryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errNotReady, "", "the server is starting or shutting down", nil)
		return
	}
	defer rt.release()
	writeJSON(w, http.StatusOK, map[string]any{
		"pipelines":          rt.list,
		"config_generation":  rt.generation,
		"catalog_generation": rt.h.Catalog().Snapshot().Generation(),
	})
}

func (s *server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", healthContentType)
	_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
}

// handleReady answers 200 once the first config's plugins are compiled and
// their pools warm, and 503 before that and from the start of shutdown.
func (s *server) handleReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", healthContentType)
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"not_ready"}`+"\n")
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

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}
