package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
)

// The session API: an operator grants tools to an agent session and
// revokes them, over the approver channel (withAuth takes approver tokens
// only on these routes), and reads a session's pins and grants with their
// status against the current catalog. These routes change what agents may
// call, so an agent's token never reaches them. Every change is in the
// event log before it is answered 200.

const (
	sessionsRoute          = "/v1/sessions"
	sessionActivatePattern = "POST " + sessionsRoute + "/{id}/activate"
	sessionRevokePattern   = "POST " + sessionsRoute + "/{id}/revoke"
	sessionGetPattern      = "GET " + sessionsRoute + "/{id}"

	// maxSessionBody caps an activate or revoke body; maxSessionTools
	// and maxToolNameBytes bound what it names, so that the change's
	// record stays small.
	maxSessionBody   = 64 << 10
	maxSessionTools  = 128
	maxToolNameBytes = 256
)

// Event-log record kinds of the session API.
const (
	kindSessionActivated = "session_activated"
	kindSessionRevoked   = "session_revoked"
)

// errUnknownSession is the code of a session the store does not hold.
const errUnknownSession = "unknown_session"

// isSessionRoute: the session API's paths, on the approver channel.
func isSessionRoute(path string) bool {
	return path == sessionsRoute || strings.HasPrefix(path, sessionsRoute+"/")
}

// sessionRouteLabel is the metrics label of a session route pattern, or ""
// for any other pattern.
func sessionRouteLabel(pattern string) string {
	switch pattern {
	case sessionActivatePattern, sessionRevokePattern, sessionGetPattern:
		_, path, _ := strings.Cut(pattern, " ")
		return path
	}
	return ""
}

// SessionView is a session's pins and grants with their status against a
// catalog snapshot: the answer of GET /v1/sessions/{id} and of
// `gatehost session show --output json`.
type SessionView struct {
	Session string `json:"session"`
	Version uint64 `json:"version"`
	// Catalog is the generation of the snapshot the statuses are against.
	Catalog uint64        `json:"catalog_generation"`
	Tools   []SessionTool `json:"tools"`
}

// SessionTool is one pin or grant. Status is "ok" (a call would pass the
// exec gate's pin checks), session.DropRemoved or session.DropDrifted with
// Drift saying what differs (session.Pin.Drift).
type SessionTool struct {
	Tool  string `json:"tool"`
	Basis string `json:"basis"` // "core" or "exact"
	// CatalogGeneration is when a grant was made or last carried forward;
	// absent for a core pin.
	CatalogGeneration *uint64  `json:"catalog_generation,omitempty"`
	SchemaDigest      string   `json:"schema_digest"`
	PolicyDigest      string   `json:"policy_digest"` // "" for a pin made before policy digests
	Provenance        string   `json:"provenance"`
	Status            string   `json:"status"`
	Drift             []string `json:"drift,omitempty"`
}

// ViewSession returns s's pins (sorted by tool id), then its grants
// (sorted), each with its status against snap.
func ViewSession(s *session.Set, snap *catalog.Snapshot) SessionView {
	v := SessionView{Session: s.ID, Version: s.Version, Catalog: snap.Generation(), Tools: []SessionTool{}}
	view := func(id, basis string, gen *uint64, p session.Pin) SessionTool {
		status, drift := p.Status(snap, id)
		return SessionTool{Tool: id, Basis: basis, CatalogGeneration: gen, SchemaDigest: p.SchemaDigest,
			PolicyDigest: p.PolicyDigest, Provenance: p.Provenance, Status: status, Drift: drift}
	}
	for _, id := range slices.Sorted(maps.Keys(s.Core)) {
		v.Tools = append(v.Tools, view(id, "core", nil, s.Core[id]))
	}
	for _, id := range slices.Sorted(maps.Keys(s.Activated)) {
		a := s.Activated[id]
		gen := a.Grant.CatalogGeneration
		v.Tools = append(v.Tools, view(id, "exact", &gen, a.Pin()))
	}
	return v
}

// sessionChange is the data of a session_activated or session_revoked
// record: the canonical ids granted or revoked and the version after.
type sessionChange struct {
	Session  string   `json:"session"`
	Tools    []string `json:"tools"`
	Version  uint64   `json:"version"`
	Operator string   `json:"operator,omitempty"` // the approver token's name
}

// toolsRequest is the body of activate and revoke.
type toolsRequest struct {
	Tools []string `json:"tools"`
}

// sessionStatus maps a session error's code to the HTTP status it answers.
var sessionStatus = map[string]int{
	"invalid_session":  http.StatusBadRequest,
	"unknown_tool":     http.StatusBadRequest,
	"untrusted_source": http.StatusBadRequest,
	"duplicate_tool":   http.StatusBadRequest,
	errUnknownSession:  http.StatusNotFound,
	"already_active":   http.StatusConflict,
	"not_activated":    http.StatusConflict,
	"core_tool":        http.StatusConflict,
	"version_overflow": http.StatusConflict,
	errStoreFailure:    http.StatusServiceUnavailable,
}

// writeSessionError answers a session operation's error with its code. A
// store failure is 503 with Retry-After, its cause logged, not answered
// (it may name the store's host or file). Anything else is an internal
// error.
func (s *Server) writeSessionError(w http.ResponseWriter, r *http.Request, op, id string, err error) {
	var se *session.Error
	if errors.As(err, &se) {
		if status, ok := sessionStatus[se.Code]; ok {
			msg := err.Error()
			if status == http.StatusServiceUnavailable {
				s.logger.Error("gatehost serve: session store failed", "op", op, "session", id,
					"request_id", r.Header.Get(headerRequestID), "err", err)
				w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
				msg = "the session store failed (the server's log has the cause); retry. A change whose answer was lost may have been made: GET the session to see"
			}
			field := ""
			switch {
			case se.Code == "invalid_session" || se.Code == errUnknownSession:
				field = "id"
			case se.Tool != "":
				field = "/tools"
			}
			writeError(w, r, status, se.Code, field, msg, nil)
			return
		}
	}
	s.logger.Error("gatehost serve: session operation failed", "op", op, "session", id,
		"request_id", r.Header.Get(headerRequestID), "err", err)
	writeError(w, r, http.StatusInternalServerError, errInternal, "", "the session operation failed", nil)
}

// openSessionRequest answers what every session route refuses before the
// store is touched: an approver token the approval rule refuses (403
// not_approver: approvals.approvers, the token still loaded), no runtime
// (503), an invalid session id (400), and for a change, a body that is not
// {"tools": [...]} with 1 to maxSessionTools names (400, 413). It returns
// the held runtime's catalog snapshot; the caller releases the runtime.
func (s *Server) openSessionRequest(w http.ResponseWriter, r *http.Request, change bool) (*loadedConfig, *catalog.Snapshot, string, []string) {
	// The one rule of who may approve: a grant lets agents call tools as
	// surely as an approval does.
	c := credentialOf(r.Context())
	if c == nil { // withAuth lets only approver tokens through
		writeError(w, r, http.StatusForbidden, errForbidden, "Authorization", "an approver token is required", nil)
		return nil, nil, "", nil
	}
	if by := compose.ApproverPrincipal(c); s.desk.Rule().MayApprove(by) != nil {
		writeError(w, r, http.StatusForbidden, errNotApprover, "Authorization",
			"approver "+by.Subject+" may not change sessions: not one of approvals.approvers, or its token is no longer loaded", nil)
		return nil, nil, "", nil
	}
	id := r.PathValue("id")
	if !session.ValidID(id) {
		writeError(w, r, http.StatusBadRequest, "invalid_session", "id",
			fmt.Sprintf("want 1 to %d bytes of A-Z a-z 0-9 _ . : -", session.MaxIDBytes), nil)
		return nil, nil, "", nil
	}
	var tools []string
	if change {
		body, ok := readBody(w, r, maxSessionBody)
		if !ok {
			return nil, nil, "", nil
		}
		if tools, ok = decodeTools(w, r, body); !ok {
			return nil, nil, "", nil
		}
	}
	rt := s.acquireOr503(w, r)
	if rt == nil {
		return nil, nil, "", nil
	}
	return rt, rt.h.Catalog().Snapshot(), id, tools
}

// decodeTools reads {"tools": [NAME, ...]}: one JSON object, no other
// member, 1 to maxSessionTools non-empty names of at most
// maxToolNameBytes bytes.
func decodeTools(w http.ResponseWriter, r *http.Request, body []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req toolsRequest
	err := dec.Decode(&req)
	if err == nil && dec.Decode(new(json.RawMessage)) != io.EOF {
		err = errors.New("data after the JSON object")
	}
	if err != nil {
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "", `want {"tools": ["TOOL", ...]}: `+err.Error(), nil)
		return nil, false
	}
	if len(req.Tools) == 0 || len(req.Tools) > maxSessionTools {
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "/tools", fmt.Sprintf("name 1 to %d tools", maxSessionTools), nil)
		return nil, false
	}
	for i, name := range req.Tools {
		if name == "" || len(name) > maxToolNameBytes {
			writeError(w, r, http.StatusBadRequest, errInvalidRequest, fmt.Sprintf("/tools/%d", i),
				fmt.Sprintf("a tool name is 1 to %d bytes", maxToolNameBytes), nil)
			return nil, false
		}
	}
	return req.Tools, true
}

// handleSessionGet is GET /v1/sessions/{id}: the session's pins and grants
// with their status against the current catalog; 404 unknown_session for
// a session the store does not hold.
func (s *Server) handleSessionGet(w http.ResponseWriter, r *http.Request) {
	defer s.noteErrorCode(w)
	rt, snap, id, _ := s.openSessionRequest(w, r, false)
	if rt == nil {
		return
	}
	defer rt.release()
	set, err := s.sessions.Load(r.Context(), id)
	if err != nil {
		s.writeSessionError(w, r, "load", id, err)
		return
	}
	if set == nil {
		writeError(w, r, http.StatusNotFound, errUnknownSession, "id", fmt.Sprintf("no session %q", id), nil)
		return
	}
	writeJSON(w, http.StatusOK, ViewSession(set, snap))
}

// handleSessionActivate is POST /v1/sessions/{id}/activate {"tools": [...]}:
// session.ActivateMany on the current catalog, all or nothing; a session
// not held is created with an empty core.
func (s *Server) handleSessionActivate(w http.ResponseWriter, r *http.Request) {
	defer s.noteErrorCode(w)
	rt, snap, id, names := s.openSessionRequest(w, r, true)
	if rt == nil {
		return
	}
	defer rt.release()
	set, err := session.ActivateMany(r.Context(), s.sessions, snap, id, names)
	if err != nil {
		s.writeSessionError(w, r, "activate", id, err)
		return
	}
	// ActivateMany granted exactly what the names resolve to in snap.
	granted := make([]string, 0, len(names))
	for _, name := range names {
		t, _ := snap.Get(name)
		granted = append(granted, t.ID)
	}
	s.answerSessionChange(w, r, kindSessionActivated, set, granted, snap)
}

// handleSessionRevoke is POST /v1/sessions/{id}/revoke {"tools": [...]}:
// session.Revoke of each tool (a canonical id, or a name of the current
// catalog), all or nothing: one store update in which every revocation
// must succeed.
func (s *Server) handleSessionRevoke(w http.ResponseWriter, r *http.Request) {
	defer s.noteErrorCode(w)
	rt, snap, id, names := s.openSessionRequest(w, r, true)
	if rt == nil {
		return
	}
	defer rt.release()
	var revoked []string
	set, err := s.sessions.Update(r.Context(), id, func(cur *session.Set) (*session.Set, error) {
		var err error
		revoked, cur, err = revokeAll(r.Context(), cur, snap, id, names)
		return cur, err
	})
	if err != nil {
		s.writeSessionError(w, r, "revoke", id, err)
		return
	}
	s.answerSessionChange(w, r, kindSessionRevoked, set, revoked, snap)
}

// revokeAll applies session.Revoke for each name to a copy of cur held in
// a scratch MemStore, so that the revocations are host/session's own and
// the store sees them as one change. It returns the canonical ids revoked,
// in the order named.
func revokeAll(ctx context.Context, cur *session.Set, snap *catalog.Snapshot, id string, names []string) ([]string, *session.Set, error) {
	scratch := session.NewMemStore()
	if _, err := scratch.Update(ctx, id, func(*session.Set) (*session.Set, error) { return cur, nil }); err != nil {
		return nil, nil, err
	}
	revoked := make([]string, 0, len(names))
	set := cur
	for _, name := range names {
		before := set
		var err error
		if set, err = session.Revoke(ctx, scratch, snap, id, name); err != nil {
			return nil, nil, err
		}
		for tool := range before.Activated {
			if _, kept := set.Activated[tool]; !kept {
				revoked = append(revoked, tool)
			}
		}
	}
	return revoked, set, nil
}

// answerSessionChange records a change made and answers 200 with the
// session's view. The change is already in the store: a failed record is
// a 500 that says so, for the operator to see the log is behind the store.
func (s *Server) answerSessionChange(w http.ResponseWriter, r *http.Request, kind string, set *session.Set, tools []string, snap *catalog.Snapshot) {
	rec := sessionChange{Session: set.ID, Tools: tools, Version: set.Version}
	if c := credentialOf(r.Context()); c != nil {
		rec.Operator = c.Name
	}
	data, _ := json.Marshal(rec)
	reqID := r.Header.Get(headerRequestID)
	if _, err := s.evlog.Append(eventlog.Record{Kind: kind, RequestID: reqID, Time: s.now(), Data: data}); err != nil {
		s.logger.Error("gatehost serve: session change made but not recorded", "kind", kind, "session", set.ID,
			"tools", tools, "version", set.Version, "request_id", reqID, "err", err)
		writeError(w, r, http.StatusInternalServerError, errEventLogFailed, "",
			fmt.Sprintf("the change was made (session %s is at version %d) but could not be recorded in the event log", set.ID, set.Version), nil)
		return
	}
	s.logger.Info("gatehost serve: "+strings.ReplaceAll(kind, "_", " "), "session", set.ID, "tools", tools,
		"version", set.Version, "operator", rec.Operator, "request_id", reqID)
	writeJSON(w, http.StatusOK, ViewSession(set, snap))
}

// noteErrorCode puts the answer's error code into the access log line.
func (s *Server) noteErrorCode(w http.ResponseWriter) {
	if sw, ok := w.(*statusWriter); ok {
		sw.code = w.Header().Get("X-Gatehost-Error")
	}
}
