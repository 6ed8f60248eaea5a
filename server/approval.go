package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/oneline"
)

// Approvals: a person's confirmation of one tool call. A check refused for
// want of one opens a request; an approver decides it on the approval page
// or through POST /v1/approvals (approval.Desk.Decide, the one rule of
// both), and the agent's identical call made again, or presenting the
// approval in X-Gatehost-Confirmation, runs once. The rule — who may
// decide, the binding, expiry, single use, a mismatch burns, the cap, the
// records — is package approval's, the same as gatehost mcp's; the store
// is the approvals: section's (memory, a file shared with the machine's
// other gatehost processes, or the fleet's PostgreSQL store), kept across
// reloads.

const (
	// DefaultApprovalTTL and MaxApprovalTTL are approval.DefaultTTL and
	// approval.MaxTTL.
	DefaultApprovalTTL = approval.DefaultTTL
	MaxApprovalTTL     = approval.MaxTTL

	approvalsRoute = "/v1/approvals"
)

// sha256Hex is the lowercase hex SHA-256 of b.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// openApprovals opens the approvals of config l: its store, and the TTL of
// approvals.ttl or the deprecated --approval-ttl (Options.ApprovalTTL). The
// server's event log records them; the request's credential names the
// agent that presents one.
func (s *Server) openApprovals(l *config.Loaded) error {
	ttl := l.Approvals.TTL
	for _, d := range l.Approvals.Deprecated {
		s.logger.Warn("gatehost serve: config " + l.File + ": " + d)
	}
	if o := s.opts.ApprovalTTL; o != 0 {
		if l.Approvals.TTLSet && o != ttl {
			return fmt.Errorf("%w: --approval-ttl %s: deprecated, replaced by approvals.ttl, which config %s sets to %s; drop the flag", ErrUsage, o, l.File, ttl)
		}
		s.logger.Warn("gatehost serve: --approval-ttl is deprecated: set approvals.ttl in the config, the one approval TTL of gatehost serve and gatehost mcp")
		ttl = o
	}
	st, err := compose.OpenApprovals(l, s.backends)
	if err != nil {
		return err
	}
	s.approvals, err = approval.New(approval.Options{Store: st, TTL: ttl, Now: s.now, Logger: s.logger,
		Record: func(r eventlog.Record) error {
			_, err := s.evlog.Append(r)
			return err
		},
		Agent: func(ctx context.Context) string {
			if c := credentialOf(ctx); c != nil {
				return c.Name
			}
			return ""
		}})
	if err != nil {
		return err
	}
	// The approval page's requests: approvers (approvals.approvers, else
	// every approver token) decide them; webhooks hear of each.
	rule, err := compose.ApprovalRule(l, s.approvers.Load(), s.logger)
	if err != nil {
		return err
	}
	notifier, err := compose.OpenNotifier(l, func(id string) string { return s.desk.URL(id) }, s.logger)
	if err != nil {
		return err
	}
	do := approval.DeskOptions{Approvals: s.approvals, Rule: rule,
		PageURL: l.Approvals.Page.URL, MaxPending: l.Approvals.MaxPending, Logger: s.logger}
	if notifier != nil {
		s.notifier, do.Notify = notifier, notifier.Notify
	}
	s.desk, err = approval.NewDesk(do)
	if err != nil {
		return fmt.Errorf("config %s: approvals.page.url: %w", l.File, err)
	}
	return nil
}

// approvalView is what a refused check says of the approval it needs
// (checkAnswer.Approval): the request on the approval page, its state,
// and the page's URL. The approval itself is never in it.
type approvalView struct {
	RequestID string    `json:"request_id,omitempty"`
	State     string    `json:"state"`
	URL       string    `json:"url,omitempty"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	Note      string    `json:"note,omitempty"`
}

// checkAnswer is the 200 answer of a check: the Decision, and for a call
// refused for want of a person's approval alone, the approval request.
type checkAnswer struct {
	*host.Decision
	Approval *approvalView `json:"approval,omitempty"`
}

// askApproval is the approval rule of a check refused only for want of a
// confirmation, with none presented: the call becomes a request on the
// approval page (or meets the one open for it). Once an approver approved
// it, the identical call made again runs: the server claims the approval
// (approval.Desk.Use) and decides the call again presenting it, and that
// second decision is the answer. Otherwise the answer is d, with the
// request.
func (s *Server) askApproval(ctx context.Context, rt *loadedConfig, sr *subjectRequest, opts host.RunOptions, d *host.Decision) (*host.Decision, *approvalView, error) {
	call, err := approval.Bind(rt.h, sr.name, sr.session, opts.Principal, sr.body, sr.format)
	if err != nil {
		return d, &approvalView{State: "unavailable"}, nil
	}
	r, _, err := s.desk.Open(ctx, approval.Request{Binding: call.Binding, Effect: string(call.Tool.Effect), Caller: opts.Principal,
		Findings: d.Blocking(), Arguments: call.Arguments, Front: "serve"})
	if err != nil {
		s.logger.Warn("gatehost serve: approval request not opened", "pipeline", sr.name, "request_id", opts.RequestID, "err", err)
		return d, &approvalView{State: "unavailable"}, nil
	}
	if r.State == approval.StateApproved {
		if r, err = s.desk.UseReady(ctx, r.ID); err == nil {
			opts.ConfirmationToken = r.ApprovalID
			d2, err := rt.h.Check(ctx, sr.name, sr.body, opts)
			return d2, nil, err
		}
	}
	return d, &approvalView{RequestID: r.ID, State: r.State, URL: s.desk.URL(r.ID), ExpiresAt: r.ExpiresAt, Note: r.Note}, nil
}

// handleMintApproval is POST /v1/approvals?pipeline=NAME[&session=ID][&format=F][&request=ID]
// with the tool call as the body, in any format the check route takes: an
// approver approves the request the agent's check opened for that very
// call (request= picks one when callers sharing the session made the same
// call). withAuth has already required an approver token; the decision is
// the desk's (approval.Desk.Decide), under the rule the approval page
// applies: approvals.approvers, the token still loaded, and never the
// caller's own call. It answers 201 with the approval; the decision is in
// the event log before the approval exists.
func (s *Server) handleMintApproval(w http.ResponseWriter, r *http.Request) {
	if sw, ok := w.(*statusWriter); ok {
		defer func() { sw.code = w.Header().Get("X-Gatehost-Error") }()
	}
	name := r.URL.Query().Get("pipeline")
	if name == "" {
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "pipeline", "required: the tool_call pipeline the approval is for", nil)
		return
	}
	reqID := r.URL.Query().Get("request")
	if reqID != "" && !approval.ValidRequestID(reqID) {
		writeError(w, r, http.StatusBadRequest, errInvalidRequest, "request", "not a request id (rq- and 32 lowercase hex digits)", nil)
		return
	}
	// Who may decide is asked first, so that nobody else learns which
	// calls wait.
	c := credentialOf(r.Context())
	if c == nil { // withAuth lets only approver tokens through
		writeError(w, r, http.StatusForbidden, errForbidden, "Authorization", "an approver token is required", nil)
		return
	}
	by := compose.ApproverPrincipal(c)
	if err := s.desk.Rule().MayApprove(by); err != nil {
		s.writeDecideError(w, r, by, err)
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
	// The approval binds the native subject exactly as the host will
	// record the checked call: the host makes it, whatever the format.
	// The caller is the request's.
	call, err := approval.Bind(sr.rt.h, name, sr.session, nil, sr.body, sr.format)
	switch {
	case errors.Is(err, approval.ErrUnparsable):
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "",
			"the call's arguments could not be decoded; such a call never runs, so there is nothing to approve", nil)
		return
	case errors.Is(err, approval.ErrNotInCatalog):
		writeError(w, r, http.StatusBadRequest, errInvalidSubject, "",
			oneline.Of(err.Error())+"; a call to it is refused whatever is approved", nil)
		return
	case err != nil:
		if !s.writeInputError(w, r, err) {
			s.logger.Error("gatehost serve: approval subject not read", "pipeline", name, "request_id", r.Header.Get(headerRequestID), "err", err)
			writeError(w, r, http.StatusInternalServerError, errInternal, "", "the call could not be read; no approval was issued", nil)
		}
		return
	}
	list, err := s.desk.List(r.Context())
	if err != nil {
		s.writeDecideError(w, r, by, err)
		return
	}
	now := s.approvals.Now()
	var found []string
	for _, q := range list {
		b := call.Binding
		b.CallerKey = q.CallerKey
		if q.Pending(now) && q.CallerKey != "" && q.Binding == b && (reqID == "" || q.ID == reqID) {
			found = append(found, q.ID)
		}
	}
	switch len(found) {
	case 0:
		writeError(w, r, http.StatusNotFound, errNoRequest, "",
			"no request waits for this call: the agent's check of it opens one (its answer names the request), then it is approved", nil)
		return
	case 1:
	default:
		writeError(w, r, http.StatusConflict, errAmbiguousRequest, "request",
			fmt.Sprintf("%d callers wait for this call (requests %s): name one with request=", len(found), strings.Join(found, ", ")), nil)
		return
	}
	got, err := s.desk.Decide(r.Context(), found[0], by, true, "")
	if err != nil {
		s.writeDecideError(w, r, by, err)
		return
	}
	writeJSON(w, http.StatusCreated, approval.Approval{ID: got.ApprovalID, Binding: got.Binding, ExpiresAt: got.ExpiresAt,
		Approver: approval.PrincipalName(got.DecidedBy), ApprovedBy: got.DecidedBy, Request: got.ID})
}

// writeDecideError answers an approver's decision refused or failed.
func (s *Server) writeDecideError(w http.ResponseWriter, r *http.Request, by *abi.Principal, err error) {
	switch {
	case errors.Is(err, approval.ErrSelfApproval):
		writeError(w, r, http.StatusForbidden, errSelfApproval, "Authorization", "this approver made the call; another approver must decide it", nil)
	case errors.Is(err, approval.ErrNotApprover):
		writeError(w, r, http.StatusForbidden, errNotApprover, "Authorization",
			"approver "+by.Subject+" may not approve: not one of approvals.approvers, or its token is no longer loaded", nil)
	case errors.Is(err, approval.ErrDecided):
		writeError(w, r, http.StatusConflict, errDecided, "", "the request was decided already", nil)
	case errors.Is(err, approval.ErrNoRequest), errors.Is(err, approval.ErrRequestExpired):
		writeError(w, r, http.StatusNotFound, errNoRequest, "", "the request expired before it was decided; the agent's next check asks anew", nil)
	case errors.Is(err, approval.ErrFull):
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusTooManyRequests, errTooManyApprovals, "",
			fmt.Sprintf("%d approvals are outstanding; wait for some to be used or expire", s.approvals.MaxOutstanding()), nil)
	case errors.Is(err, approval.ErrNotRecorded):
		s.logger.Error("gatehost serve: approval not recorded; not issued", "request_id", r.Header.Get(headerRequestID), "err", err)
		writeError(w, r, http.StatusInternalServerError, errEventLogFailed, "", "the approval could not be recorded; none was issued", nil)
	default:
		s.logger.Error("gatehost serve: approval store failed; not issued", "request_id", r.Header.Get(headerRequestID), "err", err)
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errStoreFailure, "", "the approval store failed (the server's log has the cause); none was issued", nil)
	}
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
