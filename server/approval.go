package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// Approvals: a person's confirmation of one tool call, minted through
// POST /v1/approvals with an approver token and presented by the agent in
// X-Gatehost-Confirmation. The rule — the binding, expiry, single use, a
// mismatch burns, the cap, the records — is package approval's, the same
// as gatehost mcp's; the store is the approvals: section's (memory, a file
// shared with the machine's other gatehost processes, or the fleet's
// PostgreSQL store), kept across reloads.

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
	return err
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
	approver := ""
	if c := credentialOf(r.Context()); c != nil {
		approver = c.Name
	}
	b := approval.Binding{Pipeline: name, Session: sess, Tool: tool.ID, SchemaDigest: tool.SchemaDigest, SubjectSHA256: sha256Hex(native)}
	a, err := s.approvals.Mint(r.Context(), b, approver, "", approval.Origin{RequestID: r.Header.Get(headerRequestID)})
	switch {
	case errors.Is(err, approval.ErrFull):
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusTooManyRequests, errTooManyApprovals, "",
			fmt.Sprintf("%d approvals are outstanding; wait for some to be used or expire", s.approvals.MaxOutstanding()), nil)
		return
	case errors.Is(err, approval.ErrNotRecorded):
		s.logger.Error("gatehost serve: approval not recorded; not issued", "pipeline", name, "request_id", r.Header.Get(headerRequestID), "err", err)
		writeError(w, r, http.StatusInternalServerError, errEventLogFailed, "", "the approval could not be recorded; none was issued", nil)
		return
	case err != nil:
		s.logger.Error("gatehost serve: approval store failed; not issued", "pipeline", name, "request_id", r.Header.Get(headerRequestID), "err", err)
		w.Header().Set("Retry-After", retryAfter(s.opts.RetryAfter))
		writeError(w, r, http.StatusServiceUnavailable, errStoreFailure, "", "the approval store failed (the server's log has the cause); none was issued", nil)
		return
	}
	writeJSON(w, http.StatusCreated, a)
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
