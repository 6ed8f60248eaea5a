package host

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/session"
)

// The session capability (abi.CapabilitySession) lets a stage read the run's
// own agent session (operation session.get; abi/SPEC.md §7.9). The set is
// read once per run, when the run starts, so every stage and every call of a
// run sees the same session, as it sees the same catalog snapshot. Gates
// cannot change sessions.
func init() { registerCapability(abi.CapabilitySession, sessionCapability{}) }

type sessionCapability struct{}

// pinnedSession is the run's session set, read at the start of the run.
type pinnedSession struct {
	set    *session.Set // nil: the store does not hold the session
	err    error        // the store could not be read
	digest string       // set.Digest(); "" when set is nil or err is not
}

// errSessionStore is what a stage is answered when the session store
// failed: a fixed text, since the cause (a database's user, name, host and
// port, or a file's path) is the operator's, not the agent's. The cause
// goes to the host's log with the run id.
var errSessionStore = &abi.CallError{Code: abi.ErrCodeUnavailable, Message: "session store unavailable"}

// pinSession reads the session of a run whose pipeline grants the session
// capability to some stage; otherwise it reads nothing. A store failure is
// (session.ErrStore) is logged with runID and pinned as errSessionStore.
func (h *Host) pinSession(ctx context.Context, p *pipeline, id, runID string) *pinnedSession {
	if id == "" {
		return nil
	}
	for _, s := range p.stages {
		for _, c := range s.cfg.Capabilities {
			if c == abi.CapabilitySession {
				set, err := h.sessions.Load(ctx, id)
				if errors.Is(err, session.ErrStore) {
					h.logger.Error("host: session store unavailable; the run's session stages are inconclusive",
						"run_id", runID, "pipeline", p.name, "session", id, "err", err)
					err = errSessionStore
				}
				ps := &pinnedSession{set: set, err: err}
				if err == nil {
					ps.digest = set.Digest()
				}
				return ps
			}
		}
	}
	return nil
}

func (sessionCapability) call(_ context.Context, rc *runContext, op string, request []byte) (any, error) {
	if op != abi.OpSessionGet {
		return nil, unknownOperation(op)
	}
	var req abi.SessionGetRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, badRequest(op, err)
	}
	ps := rc.pinned
	if ps == nil {
		return abi.SessionGetAnswer{Session: rc.session}, nil
	}
	if ps.err != nil {
		return nil, ps.err
	}
	return ps.set.Lookup(rc.session, req.Tool), nil
}

// Sessions returns the host's session store: Config.Sessions, or the
// in-memory store the host made when it was nil.
func (h *Host) Sessions() session.Store { return h.sessions }
