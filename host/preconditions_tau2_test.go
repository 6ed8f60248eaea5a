package host_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
)

type tau2Task struct {
	ID                 string `json:"id"`
	EvaluationCriteria *struct {
		Actions []struct {
			ActionID  string          `json:"action_id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"actions"`
	} `json:"evaluation_criteria"`
}

func tau2Rig(t testing.TB) *pcRig {
	return newPCRig(t, airlineNow, map[string]host.Domain{
		"retail":  {Catalog: loadCatalog(t, "testdata/domains/retail/domain.yaml"), Source: docs(retailCollections(t))},
		"airline": {Catalog: loadCatalog(t, "testdata/domains/airline/domain.yaml"), Source: docs(airlineCollections(t))},
	})
}

// tau2KnownDenials are the expected write actions of tasks.json that the
// execute check denies against the initial database, each with why (see
// docs/RATIONALE.md, "Preconditions": a dry or execute check sees the state
// as it is, not as earlier writes of the same task will leave it).
var tau2KnownDenials = map[string]string{
	// The ground truth first tries an exchange on order #W7464385, which is
	// pending, not delivered; tau2's own tool refuses it too ("Non-delivered
	// order cannot be exchanged"), and the next expected action modifies the
	// pending order instead. The denial is right on any state.
	"retail task 64 64_6 exchange_delivered_order_items": "order_is_delivered",
	// 7_2 first moves XEHM4B from basic economy to business on the same
	// flights; cancelling a business reservation is then allowed. Against
	// the initial database it is still a basic economy booking from
	// 2024-05-01 without insurance or a cancelled flight: the rule depends
	// on the effect of an earlier write of the same plan.
	"airline task 7 7_3 cancel_reservation": "cancellation_eligible",
	// 32_3 first moves OWZ4XL from basic economy to economy on the same
	// flights; 32_4 then changes the flights, which economy allows. Against
	// the initial database the reservation is still basic economy: again an
	// earlier write's effect.
	"airline task 32 32_4 update_reservation_flights": "basic_economy_flights_unchanged",
}

// TestPreconditionsTau2Tasks runs every expected write action of the tau2
// retail and airline tasks as a tool_call (execute mode) against the initial
// database, natively and in wasm, and each task's writes together as one
// proposal (dry mode). It reports how many are admitted and requires every
// denial to be a known one.
func TestPreconditionsTau2Tasks(t *testing.T) {
	rig := tau2Rig(t)
	for _, dom := range []string{"retail", "airline"} {
		var tasks []tau2Task
		require.NoError(t, json.Unmarshal(readFile(t, "testdata/domains/"+dom+"/tasks.json"), &tasks))
		cat := rig.domains[dom].Catalog
		writes, admitted := 0, 0
		var denials []string
		for _, task := range tasks {
			if task.EvaluationCriteria == nil {
				continue
			}
			var calls []abi.ToolCall
			deniedExec := map[int]string{}
			for _, a := range task.EvaluationCriteria.Actions {
				c, ok := cat.Capability(a.Name)
				require.True(t, ok, "task %s: %s is not in the %s catalog", task.ID, a.Name, dom)
				if !abi.IsWriteKind(c.Kind) {
					continue
				}
				tc := abi.ToolCall{ID: a.ActionID, Tool: a.Name, Parameters: a.Arguments}
				calls = append(calls, tc)
				writes++
				b, _ := json.Marshal(tc)
				r := rig.check(t, dom, abi.SubjectToolCall, b)
				if r.Verdict == abi.Accepted {
					admitted++
					continue
				}
				key := fmt.Sprintf("%s task %s %s %s", dom, task.ID, a.ActionID, a.Name)
				ids := strings.Join(r.failedIDs(), ",")
				denials = append(denials, key+": "+ids)
				deniedExec[len(calls)-1] = ids
				assert.Equal(t, tau2KnownDenials[key], ids, "unexpected denial: %s", key)
			}
			if len(calls) > 0 { // dry: the same writes as one proposal deny the same actions
				r := rig.check(t, dom, abi.SubjectProposal, proposal(t, calls...))
				deniedDry := map[int]string{}
				for _, f := range r.Findings {
					id, _ := f.Details["precondition"].(string)
					assert.Equal(t, "dry", f.Details["mode"])
					deniedDry[*f.ActionIndex] = strings.Trim(deniedDry[*f.ActionIndex]+","+id, ",")
				}
				assert.Equal(t, deniedExec, deniedDry, "task %s: dry and execute disagree", task.ID)
			}
		}
		t.Logf("%s: %d expected write actions, %d admitted, %d denied", dom, writes, admitted, writes-admitted)
		assert.Equal(t, map[string]int{"retail": 180, "airline": 50}[dom], writes)
		for _, d := range denials {
			t.Logf("  denied: %s", d)
		}
	}
}
