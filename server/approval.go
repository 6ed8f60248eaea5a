package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/oneline"
)

// Approvals: a person's confirmation of one tool call, minted through
// POST /v1/approvals with an approver token and presented by the agent in
// X-Gatehost-Confirmation. An approval is single-use, expires, and binds
// the pipeline, the session, the SHA-256 of the compacted native subject
// (the subject_sha256 of the run's decision record), the tool's canonical
// id and its schema digest. The store is the process's memory: approvals
// do not outlive a restart and are not shared between replicas.

const (
	// DefaultApprovalTTL is how long an approval stays usable: long enough
	// for a person to approve and the agent to retry, short enough that a
	// stale one is gone.
	DefaultApprovalTTL = 5 * time.Minute
	MaxApprovalTTL     = 24 * time.Hour
	// maxApprovals caps the approvals held at once (unexpired, used or
	// not), so that a runaway approver cannot exhaust memory.
	maxApprovals = 10000

	approvalsRoute = "/v1/approvals"
)

// Event-log record kinds of approvals.
const (
	kindApprovalMinted  = "approval_minted"
	kindApprovalUsed    = "approval_used"
	kindApprovalRefused = "approval_refused"
)

// Why a presented approval confirms nothing: the reason of an
// approval_refused record.
const (
	refuseUnknown          = "approval_unknown"
	refuseExpired          = "approval_expired"
	refuseUsed             = "approval_used"
	refusePipeline         = "approval_pipeline_mismatch"
	refuseSession          = "approval_session_mismatch"
	refuseSubject          = "approval_subject_mismatch"
	refuseTool             = "approval_tool_mismatch"
	refuseSchemaDigest     = "approval_schema_digest_mismatch"
	refuseToolNotCataloged = "approval_tool_not_in_catalog"
)

var approvalIDRE = regexp.MustCompile(`^ap-[0-9a-f]{32}$`)

// approval is one minted approval.
type approval struct {
	ID            string    `json:"approval_id"`
	Pipeline      string    `json:"pipeline"`
	Session       string    `json:"session,omitempty"`
	Tool          string    `json:"tool"`
	SchemaDigest  string    `json:"schema_digest"`
	SubjectSHA256 string    `json:"subject_sha256"`
	ExpiresAt     time.Time `json:"expires_at"`
	Approver      string    `json:"approver,omitempty"`

	used bool
}

// binding is what a check presents an approval for.
type binding struct {
	pipeline, session, tool, schemaDigest, subjectSHA256 string
}

// approvalStore holds the approvals of this process.
type approvalStore struct {
	mu  sync.Mutex
	m   map[string]*approval
	max int
}

func newApprovalStore() *approvalStore {
	return &approvalStore{m: map[string]*approval{}, max: maxApprovals}
}

var errApprovalStoreFull = errors.New("too many approvals outstanding")

// reserve checks there is room for one more approval at now, dropping the
// expired ones first.
func (s *approvalStore) reserve(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, a := range s.m {
		if !now.Before(a.ExpiresAt) {
			delete(s.m, id)
		}
	}
	if len(s.m) >= s.max {
		return errApprovalStoreFull
	}
	return nil
}

func (s *approvalStore) add(a *approval) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[a.ID] = a
}

// consume resolves id for b at now. On a match it marks the approval used
// and returns it; otherwise it returns the refusal reason. A mismatch
// leaves the approval usable for what it was minted for; an expired one
// is dropped.
func (s *approvalStore) consume(id string, b binding, now time.Time) (*approval, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.m[id]
	switch {
	case !ok:
		return nil, refuseUnknown
	case !now.Before(a.ExpiresAt):
		delete(s.m, id)
		return nil, refuseExpired
	case a.used:
		return nil, refuseUsed
	case a.Pipeline != b.pipeline:
		return nil, refusePipeline
	case a.Session != b.session:
		return nil, refuseSession
	case a.SubjectSHA256 != b.subjectSHA256:
		return nil, refuseSubject
	case a.Tool != b.tool:
		return nil, refuseTool
	case a.SchemaDigest != b.schemaDigest:
		return nil, refuseSchemaDigest
	}
	a.used = true
	c := *a
	return &c, ""
}

// sha256Hex is the lowercase hex SHA-256 of b.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func newApprovalID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "ap-" + hex.EncodeToString(b[:])
}

func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// handleMintApproval is POST /v1/approvals?pipeline=NAME[&session=ID][&format=F]
// with the tool call as the body, in any format the check route takes.
// withAuth has already required an approver token. It answers 201 with the
// approval; the minting is in the event log before the approval exists.
func (s *Server) handleMintApproval(w http.ResponseWriter, r *http.Request) {
	if sw, ok := w.(*statusWriter); ok {
		defer func() { sw.code = w.Header().Get("X-Gatehost-Error") }()
	}
	name := r.URL.Query().Get("pipeline")
	if name == "" {
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "pipeline", "required: the tool_call pipeline the approval is for", nil)
		return
	}
	sr := s.openSubjectRequest(w, r, name, "pipeline", func(info host.PipelineInfo, _ string) bool {
		if info.Subject != abi.SubjectToolCall {
			writeError(w, r, http.StatusBadRequest, errInvalidRequest, "pipeline",
				fmt.Sprintf("pipeline %s checks %s subjects; approvals confirm tool calls only", name, info.Subject), nil)
			return false
		}
		return true
	})
	if sr == nil {
		return
	}
	defer sr.rt.release()
	rt, sess := sr.rt, sr.session
	// The approval binds the native subject exactly as the host will
	// record the checked call: the host makes it, whatever the format.
	native, err := rt.h.NativeSubject(name, sr.body, sr.format)
	if err != nil {
		if !s.writeInputError(w, r, err) {
			s.logger.Error("gatehost serve: approval subject not read", "pipeline", name, "request_id", r.Header.Get(headerRequestID), "err", err)
			writeError(w, r, http.StatusInternalServerError, errInternal, "", "the call could not be read; no approval was issued", nil)
		}
		return
	}
	var call struct {
		Tool       string `json:"tool"`
		ParseError string `json:"parse_error"`
	}
	if err := json.Unmarshal(native, &call); err != nil {
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "", oneline.Of(err.Error()), nil)
		return
	}
	if call.ParseError != "" {
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "",
			"the call's arguments could not be decoded; such a call never runs, so there is nothing to approve", nil)
		return
	}
	tool, ok := rt.h.Catalog().Snapshot().Get(call.Tool)
	if !ok {
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "",
			fmt.Sprintf("tool %q is not in the catalog; a call to it is refused whatever is approved", cut(call.Tool, 64)), nil)
		return
	}
	now := s.now()
	if err := s.approvals.reserve(now); err != nil {
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusTooManyRequests, errTooManyApprovals, "",
			fmt.Sprintf("%d approvals are outstanding; wait for some to be used or expire", maxApprovals), nil)
		return
	}
	a := &approval{ID: newApprovalID(), Pipeline: name, Session: sess, Tool: tool.ID, SchemaDigest: tool.SchemaDigest,
		SubjectSHA256: sha256Hex(native), ExpiresAt: now.Add(s.approvalTTL()).UTC()}
	if c := credentialOf(r.Context()); c != nil {
		a.Approver = c.name
	}
	data, _ := json.Marshal(a)
	if _, err := s.evlog.Append(eventlog.Record{Kind: kindApprovalMinted, Pipeline: name,
		RequestID: r.Header.Get(headerRequestID), Time: now, Data: data}); err != nil {
		s.logger.Error("gatehost serve: approval not recorded; not issued", "pipeline", name, "request_id", r.Header.Get(headerRequestID), "err", err)
		writeError(w, r, http.StatusInternalServerError, errEventLogFailed, "", "the approval could not be recorded; none was issued", nil)
		return
	}
	s.approvals.add(a)
	s.logger.Info("gatehost serve: approval minted", "approval_id", a.ID, "pipeline", name, "session", sess,
		"tool", a.Tool, "approver", a.Approver, "expires_at", a.ExpiresAt)
	writeJSON(w, http.StatusCreated, a)
}

func (s *Server) approvalTTL() time.Duration {
	if s.opts.ApprovalTTL > 0 {
		return s.opts.ApprovalTTL
	}
	return DefaultApprovalTTL
}

// approvalConfirmer is the host.Confirmer of every config generation the
// server builds: the X-Gatehost-Confirmation value presented with a tool
// call names an approval of s's store. Only an approval unexpired, unused,
// and minted for this very pipeline, session, subject, tool and schema
// digest confirms; anything else is recorded as refused and the run goes
// on without a confirmation, so the gate rejects what needs one. The host
// calls it on the run's pinned catalog snapshot, with the request's
// context (whose credential names the agent); the use or the refusal is in
// the event log under the run's id before any stage runs.
type approvalConfirmer struct{ s *Server }

// Confirm implements host.Confirmer. It returns an error only when the
// use or refusal could not be recorded; the host then runs nothing and
// Check returns host.ErrConfirmation.
func (c approvalConfirmer) Confirm(ctx context.Context, req host.ConfirmationRequest) (*abi.Confirmation, error) {
	s := c.s
	b := binding{pipeline: req.Pipeline, session: req.Session, subjectSHA256: req.SubjectSHA256}
	now := s.now()
	var a *approval
	reason := refuseToolNotCataloged
	if req.Tool != nil {
		b.tool, b.schemaDigest = req.Tool.ID, req.Tool.SchemaDigest
		a, reason = s.approvals.consume(req.Token, b, now)
	}
	rec := struct {
		ApprovalID    string `json:"approval_id"`
		Session       string `json:"session,omitempty"`
		Tool          string `json:"tool,omitempty"`
		SubjectSHA256 string `json:"subject_sha256"`
		Agent         string `json:"agent,omitempty"`
	}{Session: req.Session, Tool: b.tool, SubjectSHA256: b.subjectSHA256}
	if approvalIDRE.MatchString(req.Token) {
		rec.ApprovalID = req.Token // anything else is the caller's free text
	}
	if cr := credentialOf(ctx); cr != nil {
		rec.Agent = cr.name
	}
	data, _ := json.Marshal(rec)
	kind := kindApprovalUsed
	if a == nil {
		kind = kindApprovalRefused
	}
	if _, err := s.evlog.Append(eventlog.Record{Kind: kind, RunID: req.RunID, Pipeline: req.Pipeline,
		Reason: reason, RequestID: req.RequestID, Time: now, Data: data}); err != nil {
		return nil, err
	}
	if a == nil {
		s.logger.Warn("gatehost serve: confirmation refused; the call runs without one", "pipeline", req.Pipeline,
			"run_id", req.RunID, "request_id", req.RequestID, "reason", reason, "approval_id", rec.ApprovalID)
		return nil, nil
	}
	s.logger.Info("gatehost serve: approval used", "approval_id", a.ID, "pipeline", req.Pipeline, "run_id", req.RunID,
		"session", req.Session, "tool", a.Tool)
	return &abi.Confirmation{Tool: a.Tool, Token: a.ID}, nil
}

// readBody reads the request body within limit, answering the error itself
// when it cannot.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, r, http.StatusRequestEntityTooLarge, errSubjectTooLarge, "",
				fmt.Sprintf("the body exceeds the cap of %d bytes", mbe.Limit), nil)
			return nil, false
		}
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "", "reading the body: "+err.Error(), nil)
		return nil, false
	}
	return body, true
}

// isApprovalRoute: the approver channel's paths.
func isApprovalRoute(path string) bool {
	return path == approvalsRoute || strings.HasPrefix(path, approvalsRoute+"/")
}
