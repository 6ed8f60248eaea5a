package policy

import (
	"fmt"
	"slices"

	"github.com/cedar-policy/cedar-go"
)

// Unindexed decides c as Evaluate does, but against the whole policy set
// (every policy, Cedar's own PolicySet and a map of the entities) rather
// than the policies indexed for the call's action: the decision, then the
// determining policies' and the erring policies' ids, sorted.
func Unindexed(e *Engine, c Call) string {
	req, ents, err := e.Request(c)
	if err != nil {
		return "request error: " + err.Error()
	}
	dec, diag := e.set.ps.IsAuthorized(ents, req)
	return diagString(dec, diag)
}

// Indexed is Unindexed's summary of the indexed evaluation, and the
// number of policies the index kept.
func Indexed(e *Engine, c Call) (string, int) {
	req, ents, te, err := e.request(c)
	if err != nil {
		return "request error: " + err.Error(), 0
	}
	dec, diag := cedar.Authorize(te.policies, ents, req)
	return diagString(dec, diag), len(te.policies)
}

func diagString(dec cedar.Decision, diag cedar.Diagnostic) string {
	var reasons, errs []string
	for _, r := range diag.Reasons {
		reasons = append(reasons, string(r.PolicyID))
	}
	for _, e := range diag.Errors {
		errs = append(errs, string(e.PolicyID)+": "+e.Message)
	}
	slices.Sort(reasons)
	slices.Sort(errs)
	return fmt.Sprintf("%v reasons %q errors %q", dec, reasons, errs)
}
