package policy

import (
	"context"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/batch"

	"github.com/gatehost/gatehost/abi"
)

// MayPermit reports whether some call of tool t by principal p could be
// accepted, whatever its arguments: Cedar's batch evaluation with the
// context ignored, in which a permit's condition that reads the context is
// dropped (it might hold) and so is a forbid's (it might not). False means
// no call of the tool by this principal is accepted — no permit's scope
// and context-free conditions match, or a forbid applies regardless of the
// arguments; true promises nothing, the call is decided by Evaluate. An
// evaluation that errs or a principal whose claims cannot be represented
// answers true with the error: only the call itself is refused for it.
// A listing uses it to show each principal the tools it may call.
func (e *Engine) MayPermit(ctx context.Context, t abi.Tool, p *abi.Principal) (bool, error) {
	principal, pent, err := e.principal(p)
	if err != nil {
		return true, err
	}
	te := e.tool(t)
	may := false
	err = batch.Authorize(ctx, te.policies, requestEntities{principal: pent, tool: te.ents},
		batch.Request{Principal: principal, Action: te.action, Resource: te.resource, Context: batch.Ignore()},
		func(r batch.Result) error {
			if r.Decision == types.Allow || len(r.Diagnostic.Errors) > 0 {
				may = true
			}
			return nil
		})
	if err != nil {
		return true, err
	}
	return may, nil
}
