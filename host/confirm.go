package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
)

// ConfirmationRequest is what a Confirmer resolves: a confirmation token
// presented with a tool call, and what the run binds it to. It is built
// after the run's catalog snapshot is pinned, so Tool is the tool the
// run's stages will see.
type ConfirmationRequest struct {
	Pipeline string
	Session  string // RunOptions.Session
	// Principal is RunOptions.Principal: who makes the call, which an
	// approval may be bound to.
	Principal *abi.Principal
	RunID     string // the run's id, as its event log records carry it
	RequestID string // RunOptions.RequestID
	// ToolName is the name the call gives its tool.
	ToolName string
	// Tool is the call's tool as found in the run's pinned catalog
	// snapshot (by name, alias or id); nil when the snapshot has no such
	// tool. It is a shallow copy: its slices and Hints are the snapshot's,
	// not to be modified.
	Tool *catalog.Tool
	// CatalogGeneration is the generation of that snapshot, as the
	// Decision reports it.
	CatalogGeneration uint64
	// SubjectSHA256 is the lowercase hex SHA-256 of the native subject
	// exactly as the run records it (compacted JSON), the
	// decision record's subject_sha256.
	SubjectSHA256 string
	// Token is RunOptions.ConfirmationToken, never blank.
	Token string
}

// Confirmer resolves confirmation tokens (RunOptions.ConfirmationToken), for
// deployments that mint approvals: Config.Confirmer.
//
// Confirm returns the confirmation the gates see, or nil for none (the
// token confirms nothing: the gates then deny what needs a confirmation).
// It is called once per run given a non-blank token, before any stage, and
// not for a run refused admission (which calls no stage). An error means
// the run does not happen: Check returns it wrapped with ErrConfirmation
// and no Decision. A Confirmer that records the use of an approval does so
// under req.RunID before returning, and fails if it cannot. Confirm may be
// called concurrently.
type Confirmer interface {
	Confirm(ctx context.Context, req ConfirmationRequest) (*abi.Confirmation, error)
}

// catalogConfirmer is the Confirmer of a nil Config.Confirmer: a token
// confirms the call's tool, by its catalog id; a tool not in the snapshot
// gets no confirmation.
type catalogConfirmer struct{}

func (catalogConfirmer) Confirm(_ context.Context, req ConfirmationRequest) (*abi.Confirmation, error) {
	if req.Tool == nil {
		return nil, nil
	}
	return &abi.Confirmation{Tool: req.Tool.ID, Token: req.Token}, nil
}

// confirm resolves rn's confirmation token, if any, against rn's pinned
// snapshot; call is the decoded native tool call.
func (h *Host) confirm(ctx context.Context, rn *run, call any) error {
	token := rn.opts.ConfirmationToken
	// A blank token confirms nothing: it is what a missing one looks like.
	if strings.TrimSpace(token) == "" {
		return nil
	}
	top, _ := call.(map[string]any)
	name, _ := top["tool"].(string)
	req := ConfirmationRequest{
		Pipeline: rn.p.name, Session: rn.opts.Session, Principal: rn.opts.Principal, RunID: rn.id, RequestID: rn.opts.RequestID,
		ToolName: name, CatalogGeneration: rn.snap.Generation(), SubjectSHA256: digest(rn.subject), Token: token,
	}
	if t, ok := rn.snap.Get(name); ok {
		req.Tool = &t
	}
	var c Confirmer = catalogConfirmer{}
	if h.cfg.Confirmer != nil {
		c = h.cfg.Confirmer
	}
	conf, err := c.Confirm(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfirmation, err)
	}
	rn.confirmation = conf
	return nil
}
