package gatee2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// telecomNow is the clock of the tau2 telecom policy: "The current time is
// 2025-02-25 12:08:00 EST." (tau2's own tools use the same date).
var telecomNow = time.Date(2025, 2, 25, 12, 8, 0, 0, time.FixedZone("EST", -5*3600))

// telecomTask is the part of a tau2 telecom task the measurement reads.
type telecomTask struct {
	ID           string `json:"id"`
	InitialState *struct {
		InitializationActions []telecomCall `json:"initialization_actions"`
	} `json:"initial_state"`
	EvaluationCriteria struct {
		Actions []telecomCall `json:"actions"`
	} `json:"evaluation_criteria"`
}

// telecomCall is an initialization action (EnvType, FuncName) or an
// expected action (Requestor, Name) of a task.
type telecomCall struct {
	ActionID  string         `json:"action_id"`
	Requestor string         `json:"requestor"`
	Name      string         `json:"name"`
	EnvType   string         `json:"env_type"`
	FuncName  string         `json:"func_name"`
	Arguments map[string]any `json:"arguments"`
}

// telecomTables is db.json as tables of records, with the key field of
// each table as gatehost.yaml declares it, for reading the values the
// initialization functions compute from.
type telecomTables struct {
	tables map[string][]map[string]any
	keys   map[string]string
}

func readTelecomTables(t testing.TB) telecomTables {
	t.Helper()
	db := telecomTables{keys: gatehostDomains(t)["telecom"].Source.Keys}
	require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, "testdata/domains/telecom/db.json"), &db.tables))
	return db
}

func (tt telecomTables) record(t testing.TB, table, id string) map[string]any {
	t.Helper()
	for _, r := range tt.tables[table] {
		if r[tt.keys[table]] == id {
			return r
		}
	}
	t.Fatalf("%s %s is not in db.json", table, id)
	return nil
}

func argStr(t testing.TB, m map[string]any, k string) string {
	t.Helper()
	s, ok := m[k].(string)
	require.True(t, ok, "%s is not a string in %v", k, m)
	return s
}

// telecomInitEffects turns one operator-side initialization action of a
// task (env_type "assistant": a function of tau2's TelecomTools run before
// the conversation) into the effects it has on the operator's records.
// Customer-side ones (env_type "user") set up the simulated phone, which
// this catalog does not cover, and have none. An unknown operator-side
// function fails the test, so that a new kind of setup cannot go unmeasured.
func telecomInitEffects(t testing.TB, db telecomTables, a telecomCall) []abi.Effect {
	t.Helper()
	if a.EnvType == "user" {
		return nil
	}
	require.Equal(t, "assistant", a.EnvType, "initialization %s", a.FuncName)
	line := func() string { return argStr(t, a.Arguments, "line_id") }
	switch a.FuncName {
	case "enable_roaming", "disable_roaming":
		return []abi.Effect{{Collection: "lines", ID: line(), Set: map[string]any{"roaming_enabled": a.FuncName == "enable_roaming"}}}
	case "set_data_usage":
		return []abi.Effect{{Collection: "lines", ID: line(), Set: map[string]any{"data_used_gb": a.Arguments["data_used_gb"]}}}
	case "suspend_line_for_overdue_bill":
		// tau2 adds a bill for last month (2025-01) with the line's plan
		// price, overdue, to the customer's bills, and suspends the line;
		// with contract_ended the contract ends on the last day of last
		// month. It refuses a line that is not Active and a customer who
		// already has an overdue bill: both hold on db.json.
		cust, bill := argStr(t, a.Arguments, "customer_id"), argStr(t, a.Arguments, "new_bill_id")
		l := db.record(t, "lines", line())
		require.Equal(t, "Active", l["status"])
		price := db.record(t, "plans", argStr(t, l, "plan_id"))["price_per_month"]
		c := db.record(t, "customers", cust)
		billIDs, _ := c["bill_ids"].([]any)
		for _, id := range billIDs {
			require.NotEqual(t, "Overdue", db.record(t, "bills", id.(string))["status"])
		}
		lineSet := map[string]any{"status": "Suspended", "suspension_start_date": "2025-02-25"}
		if a.Arguments["contract_ended"] == true {
			lineSet["contract_end_date"] = "2025-01-31"
		}
		return []abi.Effect{
			{Collection: "bills", ID: bill, Set: map[string]any{
				"bill_id": bill, "customer_id": cust, "status": "Overdue", "total_due": price,
				"period_start": "2025-01-01", "period_end": "2025-01-31", "issue_date": "2025-01-01", "due_date": "2025-01-15",
				"line_items": []any{map[string]any{
					"description": "Charge for line " + line(), "amount": price, "date": "2025-02-25", "item_type": "Charge",
				}},
			}},
			{Collection: "customers", ID: cust, Set: map[string]any{fmt.Sprintf("bill_ids.%d", len(billIDs)): bill}},
			{Collection: "lines", ID: line(), Set: lineSet},
		}
	}
	t.Fatalf("operator-side initialization %s is not modelled", a.FuncName)
	return nil
}

// telecomCustomerEffects are the effects on the operator's records of an
// expected action the customer takes on their phone: make_payment pays the
// bill awaiting payment (tau2's environment then sets it to Paid); every
// other customer action changes only the phone.
func telecomCustomerEffects(a telecomCall, awaiting string) []abi.Effect {
	if a.Name == "make_payment" && awaiting != "" {
		return []abi.Effect{{Collection: "bills", ID: awaiting, Set: map[string]any{"status": "Paid"}}}
	}
	return nil
}

// withEffects is d after effs (d itself when there are none).
func withEffects(t testing.TB, d *datasource.Documents, effs []abi.Effect) *datasource.Documents {
	t.Helper()
	if len(effs) == 0 {
		return d
	}
	out, err := d.Apply(effs)
	require.NoError(t, err)
	return out
}

// telecomDryExceptions are the expected writes the one-plan dry check denies,
// each with why. The customer pays the bill (make_payment, on their phone)
// between the payment request and the lifting of the suspension; a plan of
// the agent's calls cannot contain that payment, so in it the bill is still
// awaiting payment when resume_line comes. The denial is the policy's
// ("lift the suspension after the user has paid"): the agent must wait for
// the payment, and at its turn (exec, and the dry check of the calls after
// the payment) resume_line is admitted.
var telecomDryExceptions = map[string]string{
	"[service_issue]overdue_bill_suspension[PERSONA:Easy] resume_line_2": "overdue_bills_paid",
}

// TestTau2TelecomTasks applies each tau2 telecom task's initial state to
// db.json and checks the task's expected agent writes: dry as one plan
// against the initial state, dry again per stretch between the customer's
// actions that change the operator's records, and each write alone as a
// tool_call (exec) against the state the earlier actions leave. No write may
// be denied, except the named dry exceptions.
func TestTau2TelecomTasks(t *testing.T) {
	var tasks []telecomTask
	require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, "testdata/domains/telecom/tasks_small.json"), &tasks))
	db := readTelecomTables(t)
	d := openTau2Domain(t, "telecom", telecomNow)

	writes, execOK, dryOK, stretchOK, withWrites := 0, 0, 0, 0, 0
	for _, task := range tasks {
		var init []abi.Effect
		if task.InitialState != nil {
			for _, a := range task.InitialState.InitializationActions {
				init = append(init, telecomInitEffects(t, db, a)...)
			}
		}
		// The agent's writes, and before which of them each customer
		// action with an effect on the operator's records comes.
		var calls []abi.ToolCall
		var keys []string
		customer := map[int][]abi.Effect{} // index of the next agent write → effects
		awaiting := ""
		for _, a := range task.EvaluationCriteria.Actions {
			if a.Requestor == "user" {
				customer[len(calls)] = append(customer[len(calls)], telecomCustomerEffects(a, awaiting)...)
				continue
			}
			require.Equal(t, "assistant", a.Requestor, "task %s action %s", task.ID, a.ActionID)
			c, ok := d.cat.Capability(a.Name)
			require.True(t, ok, "task %s: %s is not in the telecom catalog", task.ID, a.Name)
			if !abi.IsWriteKind(c.Kind) {
				continue
			}
			if a.Name == "send_payment_request" {
				awaiting = argStr(t, a.Arguments, "bill_id")
			}
			p, err := json.Marshal(a.Arguments)
			require.NoError(t, err)
			calls = append(calls, abi.ToolCall{ID: a.ActionID, Tool: a.Name, Parameters: p})
			keys = append(keys, task.ID+" "+a.ActionID)
		}
		if len(calls) == 0 {
			continue
		}
		withWrites++
		writes += len(calls)
		start := withEffects(t, d.base, init)

		// Dry, one plan.
		found := byAction(d.at(t, start, abi.SubjectProposal, proposal(t, calls...)))
		for i, k := range keys {
			got := strings.Join(failedAs(found[i]), ",")
			if got == "" {
				dryOK++
			}
			assert.Equal(t, telecomDryExceptions[k], got, "dry, one plan: %s", k)
		}

		// Dry per stretch, then exec call by call, over the state each
		// stretch leaves (the gate's own effects, then the customer's).
		state := withEffects(t, start, customer[0])
		for from := 0; from < len(calls); {
			to := from + 1
			for to < len(calls) && len(customer[to]) == 0 {
				to++
			}
			dry := d.at(t, state, abi.SubjectProposal, proposal(t, calls[from:to]...))
			found := byAction(dry)
			effs := dryEffects(t, dry)
			for i := from; i < to; i++ {
				if assert.Empty(t, failedAs(found[i-from]), "dry, stretch: %s", keys[i]) {
					stretchOK++
				}
				b, err := json.Marshal(calls[i])
				require.NoError(t, err)
				if assert.Empty(t, failedAs(d.at(t, state, abi.SubjectToolCall, b).Findings), "exec: %s", keys[i]) {
					execOK++
				}
				state = withEffects(t, state, effs[i-from])
			}
			state = withEffects(t, state, customer[to])
			from = to
		}
	}
	t.Logf("telecom: %d tasks, %d with agent writes, %d expected agent writes; admitted: dry (one plan) %d, dry (per stretch) %d, exec %d",
		len(tasks), withWrites, writes, dryOK, stretchOK, execOK)
	assert.Equal(t, 20, len(tasks))
	assert.Equal(t, 7, writes)
	assert.Equal(t, writes-len(telecomDryExceptions), dryOK)
	assert.Equal(t, writes, stretchOK)
	assert.Equal(t, writes, execOK)
}

// TestTau2TelecomRefusals checks the rules the tasks' states exercise and
// db.json alone cannot: the states in which tau2's ground truth is to refuse
// (transfer) rather than lift a suspension, and the payment the expected
// plan waits for.
func TestTau2TelecomRefusals(t *testing.T) {
	db := readTelecomTables(t)
	d := openTau2Domain(t, "telecom", telecomNow)
	suspended := func(contractEnded bool) *datasource.Documents {
		return withEffects(t, d.base, telecomInitEffects(t, db, telecomCall{
			EnvType: "assistant", FuncName: "suspend_line_for_overdue_bill",
			Arguments: map[string]any{"customer_id": "C1001", "line_id": "L1002", "new_bill_id": "B1234321", "contract_ended": contractEnded},
		}))
	}
	paid := func(s *datasource.Documents) *datasource.Documents {
		return withEffects(t, s, []abi.Effect{{Collection: "bills", ID: "B1234321", Set: map[string]any{"status": "Paid"}}})
	}
	// C1001 lists a bill the bills table does not have: its status is
	// unknown, so it cannot count as paid.
	unreadable := withEffects(t, d.base, []abi.Effect{{Collection: "customers", ID: "C1001", Set: map[string]any{"bill_ids.3": "B0000000"}}})
	resumeL1003 := abi.ToolCall{ID: "r3", Tool: "resume_line", Parameters: json.RawMessage(`{"customer_id":"C1001","line_id":"L1003"}`)}
	requestMissing := abi.ToolCall{ID: "pm", Tool: "send_payment_request", Parameters: json.RawMessage(`{"customer_id":"C1001","bill_id":"B0000000"}`)}
	resume := abi.ToolCall{ID: "r", Tool: "resume_line", Parameters: json.RawMessage(`{"customer_id":"C1001","line_id":"L1002"}`)}
	request := abi.ToolCall{ID: "p", Tool: "send_payment_request", Parameters: json.RawMessage(`{"customer_id":"C1001","bill_id":"B1234321"}`)}
	refuel := abi.ToolCall{ID: "f", Tool: "refuel_data", Parameters: json.RawMessage(`{"customer_id":"C1001","line_id":"L1002","gb_amount":1}`)}
	for _, tc := range []struct {
		name  string
		state *datasource.Documents
		calls []abi.ToolCall
		want  []string // the last call's failed ids, in declaration order; none: admitted
	}{
		// [service_issue]overdue_bill_suspension: before the payment.
		{"resume_before_payment", suspended(false), []abi.ToolCall{resume}, []string{"overdue_bills_paid"}},
		{"refuel_suspended", suspended(false), []abi.ToolCall{refuel}, []string{"refuel_line_active"}},
		{"request_twice", suspended(false), []abi.ToolCall{request, request}, []string{"bill_is_overdue", "no_bill_awaiting_payment"}},
		{"resume_after_payment", paid(suspended(false)), []abi.ToolCall{resume}, []string{}},
		// [service_issue]contract_end_suspension: the contract ended on
		// 2025-01-31; paid or not, the suspension stays.
		{"contract_ended_unpaid", suspended(true), []abi.ToolCall{resume}, []string{"overdue_bills_paid", "contract_not_ended"}},
		{"contract_ended_paid", paid(suspended(true)), []abi.ToolCall{resume}, []string{"contract_not_ended"}},
		// A bill of the account that cannot be read denies.
		{"resume_with_unreadable_bill", unreadable, []abi.ToolCall{resumeL1003}, []string{"overdue_bills_paid"}},
		{"request_unreadable_bill", unreadable, []abi.ToolCall{requestMissing}, []string{"bill_is_overdue", "no_bill_awaiting_payment"}},
		{"contract_ended_request_then_resume", suspended(true), []abi.ToolCall{request, resume}, []string{"overdue_bills_paid", "contract_not_ended"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := len(tc.calls) - 1
			found := byAction(d.at(t, tc.state, abi.SubjectProposal, proposal(t, tc.calls...)))
			for i := range last {
				assert.Empty(t, failedAs(found[i]), "earlier call %d", i)
			}
			assert.Equal(t, tc.want, failedAs(found[last]), "dry")
			if last == 0 {
				b, err := json.Marshal(tc.calls[0])
				require.NoError(t, err)
				assert.Equal(t, tc.want, failedAs(d.at(t, tc.state, abi.SubjectToolCall, b).Findings), "exec")
			}
		})
	}
}

// TestTau2TelecomExamples keeps the telecom example subjects deciding as
// docs/DOMAINS-TAU2.md says.
func TestTau2TelecomExamples(t *testing.T) {
	d := openTau2Domain(t, "telecom", telecomNow)
	r := d.at(t, nil, abi.SubjectToolCall, hosttest.ReadFile(t, "testdata/domains/examples/telecom-payment-request-issued.json"))
	assert.Equal(t, []string{"bill_is_overdue"}, failedAs(r.Findings))
	found := byAction(d.at(t, nil, abi.SubjectProposal, hosttest.ReadFile(t, "testdata/domains/examples/telecom-refuel-plan.json")))
	assert.Empty(t, failedAs(found[1]))
	assert.Equal(t, []string{"refuel_within_limit"}, failedAs(found[2]))
	assert.Len(t, found, 1)
}
