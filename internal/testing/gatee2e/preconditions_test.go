package gatee2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/datasource/sqlsource"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/tau2sql"
	"github.com/gatehost/gatehost/plugins/preconditions"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// swapSource is a DataSource whose data can be replaced between runs, as an
// application's state changes between plan and execution.
type swapSource struct {
	p atomic.Pointer[datasource.Documents]
}

func (s *swapSource) Prepare(ctx context.Context, v *datasource.View) error {
	return s.p.Load().Prepare(ctx, v)
}

func (s *swapSource) Rows(ctx context.Context, v *datasource.View, params map[string]any) ([]datasource.Row, error) {
	return s.p.Load().Rows(ctx, v, params)
}

func (s *swapSource) Close() error { return nil }

func bankingColls(t testing.TB) map[string]map[string]any {
	t.Helper()
	var db map[string]map[string]any
	require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, "testdata/domains/rfc/db.json"), &db))
	return db
}

// TestPreconditionsRFCAcceptance runs the RFC's acceptance tests on its own
// catalog examples (testdata/domains/rfc), natively and in wasm: an
// eligibility view blocks a write with no adapter code, require.match on a
// pending row id, and a dry acceptance followed by an execute re-check that
// denies because the state changed in between.
func TestPreconditionsRFCAcceptance(t *testing.T) {
	src := &swapSource{}
	src.p.Store(datasource.NewDocuments(bankingColls(t)))
	rig := newPCRig(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), map[string]host.Domain{
		"banking": {Catalog: hosttest.LoadCatalog(t, "testdata/domains/rfc/domain.yaml"), Source: src},
	})
	pay := func(acct, user string) []byte {
		return hosttest.ToolCall(t, "CreditCardAccountLocked_pay_from_checking", map[string]any{"credit_card_account_id": acct, "user_id": user, "amount": 120})
	}
	approve := func(acct, req string) []byte {
		return hosttest.ToolCall(t, "CreditLimitRequest_approve", map[string]any{"credit_card_account_id": acct, "request_id": req})
	}
	cases := []struct {
		name    string
		subject []byte
		want    []string
	}{
		{"eligibility view: open dispute blocks payment", pay("cc_100", "u_ana"), []string{"no_open_dispute"}},
		{"eligibility view: no dispute, payment admitted", pay("cc_200", "u_ben"), []string{}},
		{"eligibility view: account of another user yields no row", pay("cc_100", "u_ben"), []string{"unevaluable:no_open_dispute"}},
		{"require.match: pending request matches", approve("cc_200", "clr_1"), []string{}},
		{"require.match: request is not pending", approve("cc_200", "clr_2"), []string{"pending_request_matches"}},
		{"require.match: pending request of another account", approve("cc_200", "clr_3"), []string{"pending_request_matches"}},
		{"require.match: no such request", approve("cc_200", "clr_9"), []string{"pending_request_matches"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rig.check(t, "banking", abi.SubjectToolCall, c.subject)
			assert.Equal(t, c.want, r.failedIDs())
			if len(c.want) == 0 {
				assert.Equal(t, abi.Accepted, r.Verdict)
			} else {
				assert.Equal(t, abi.Rejected, r.Verdict)
				assert.Contains(t, r.Findings[0].Details, "rows")
			}
		})
	}

	t.Run("dry deny, then execute re-check denies too", func(t *testing.T) {
		var tc abi.ToolCall
		require.NoError(t, json.Unmarshal(pay("cc_100", "u_ana"), &tc))
		dry := rig.check(t, "banking", abi.SubjectProposal, proposal(t, tc))
		assert.Equal(t, abi.Rejected, dry.Verdict)
		assert.Equal(t, "dry", dry.Findings[0].Details["mode"])
		assert.Equal(t, 0, *dry.Findings[0].ActionIndex)
		exec := rig.check(t, "banking", abi.SubjectToolCall, pay("cc_100", "u_ana"))
		assert.Equal(t, abi.Rejected, exec.Verdict)
		assert.Equal(t, "execute", exec.Findings[0].Details["mode"])
		assert.Equal(t, dry.failedIDs(), exec.failedIDs())
	})
	t.Run("dry admits, the state changes, execute re-check denies", func(t *testing.T) {
		var tc abi.ToolCall
		require.NoError(t, json.Unmarshal(approve("cc_200", "clr_1"), &tc))
		assert.Equal(t, abi.Accepted, rig.check(t, "banking", abi.SubjectProposal, proposal(t, tc)).Verdict)
		src.p.Store(datasource.NewDocuments(withStatus(bankingColls(t), "credit_limit_requests", "APPROVED", "clr_1")))
		defer src.p.Store(datasource.NewDocuments(bankingColls(t)))
		exec := rig.check(t, "banking", abi.SubjectToolCall, approve("cc_200", "clr_1"))
		assert.Equal(t, abi.Rejected, exec.Verdict)
		assert.Equal(t, []string{"pending_request_matches"}, exec.failedIDs())
	})
}

// failingSource evaluates nothing: every read fails, as a database that is
// down would.
type failingSource struct{}

func (failingSource) Prepare(context.Context, *datasource.View) error { return nil }
func (failingSource) Rows(context.Context, *datasource.View, map[string]any) ([]datasource.Row, error) {
	return nil, errors.New("connection refused")
}
func (failingSource) Close() error { return nil }

const failClosedCatalog = `
domain: fc
version: 1
views:
  account:
    params: [credit_card_account_id]
    document: {collection: accounts, id: "{credit_card_account_id}"}
capabilities:
  pay:
    kind: action
    parameters: [credit_card_account_id, amount]
    preconditions:
      - id: field_present
        view: account
        bind: {credit_card_account_id: {kind: param, name: credit_card_account_id}}
        deny_when: {field: no_such_field, equals: true}
        message: The account must say whether a dispute is open.
  pay_limit:
    kind: action
    parameters: [credit_card_account_id, amount]
    preconditions:
      - id: amount_within_limit
        view: account
        bind: {credit_card_account_id: {kind: param, name: credit_card_account_id}}
        deny_when: {field: has_open_dispute, equals: {kind: param, name: amount}}
        message: Compares with a parameter.
`

// TestPreconditionsFailClosed: what cannot be evaluated denies, natively
// and in wasm, with precondition_unevaluable — a missing field, an unbound
// parameter, no row, a failing data source; an unknown operator or a missing
// view never gets past loading.
func TestPreconditionsFailClosed(t *testing.T) {
	cat, err := domain.Parse([]byte(failClosedCatalog))
	require.NoError(t, err)
	rig := newPCRig(t, time.Now(), map[string]host.Domain{
		"fc":   {Catalog: cat, Source: datasource.NewDocuments(bankingColls(t))},
		"down": {Catalog: cat, Source: failingSource{}},
	})
	cases := []struct {
		name, dom, tool string
		params          map[string]any
		reason          string
	}{
		{"missing field", "fc", "pay", map[string]any{"credit_card_account_id": "cc_100", "amount": 1}, "field no_such_field is missing"},
		{"unbound parameter in bind", "fc", "pay", map[string]any{"amount": 1}, `bind credit_card_account_id: unbound parameter "credit_card_account_id"`},
		{"unbound parameter in predicate", "fc", "pay_limit", map[string]any{"credit_card_account_id": "cc_100"}, `unbound parameter "amount"`},
		{"no row", "fc", "pay", map[string]any{"credit_card_account_id": "cc_404", "amount": 1}, "no row to test"},
		{"data source error", "down", "pay", map[string]any{"credit_card_account_id": "cc_100", "amount": 1}, "connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rig.check(t, c.dom, abi.SubjectToolCall, hosttest.ToolCall(t, c.tool, c.params))
			assert.Equal(t, abi.Rejected, r.Verdict)
			require.Len(t, r.Findings, 1)
			assert.Equal(t, preconditions.CodeUnevaluable, r.Findings[0].Code)
			assert.Contains(t, r.Findings[0].Details["reason"], c.reason)
		})
	}
	t.Run("unknown tool", func(t *testing.T) {
		r := rig.check(t, "fc", abi.SubjectToolCall, hosttest.ToolCall(t, "refund_everything", map[string]any{}))
		assert.Equal(t, []string{preconditions.CodeUnknownCapability}, r.failedIDs())
	})
	t.Run("unknown operator refused at load", func(t *testing.T) {
		_, err := domain.Parse([]byte(`{domain: x, version: 1, views: {v: {params: [a], document: {collection: c}}},
capabilities: {w: {kind: action, preconditions: [{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, roughly: 3}, message: m}]}}}`))
		require.ErrorIs(t, err, domain.ErrInvalid)
		assert.Contains(t, err.Error(), "capabilities.w.preconditions[0].deny_when")
		assert.Contains(t, err.Error(), `unknown key "roughly"`)
	})
	t.Run("missing view refused at load", func(t *testing.T) {
		_, err := domain.Parse([]byte(`{domain: x, version: 1,
capabilities: {w: {kind: action, preconditions: [{id: p1, view: nope, bind: {}, deny_when: {field: f, equals: 3}, message: m}]}}}`))
		require.ErrorIs(t, err, domain.ErrInvalid)
		assert.Contains(t, err.Error(), `capability w: precondition p1: view: no view named "nope"`)
	})
	t.Run("view the source cannot evaluate refused at load", func(t *testing.T) {
		_, err := host.New(context.Background(), host.Config{Domains: map[string]host.Domain{
			"fc": {Catalog: cat, Source: datasource.NewDocuments(map[string]map[string]any{"other": {}})},
		}})
		var ce *host.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "domains.fc.source", ce.Field)
		assert.Contains(t, err.Error(), `unknown collection "accounts"`)
	})
	t.Run("query capability not granted", func(t *testing.T) {
		resp, err := gatetest.Evaluate(context.Background(), preconditions.Gate, abi.Request{
			SubjectKind: abi.SubjectToolCall, Subject: hosttest.ToolCall(t, "pay", map[string]any{}), Config: json.RawMessage(`{"domain":"fc"}`),
		}, gatetest.NewHost())
		require.NoError(t, err)
		assert.Equal(t, abi.Rejected, resp.Verdict)
		assert.Equal(t, preconditions.CodeUnevaluable, resp.Findings[0].Code)
		assert.Contains(t, resp.Findings[0].Message, "capability_denied")
	})
}

// TestPreconditionsSQLiteSameRules runs the retail rules that have an SQL
// form (retailSQLCatalog) on the same data in SQLite and requires the same
// answers as the JSON-document source for every expected tau2 write and a
// set of rule-breaking ones.
func TestPreconditionsSQLiteSameRules(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "retail.db")
	require.NoError(t, tau2sql.BuildRetail(ctx, filepath.Join(repoRoot, "testdata/domains/retail/db.json"), dbPath))
	sqlSrc, err := sqlsource.OpenSQLite(ctx, dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { sqlSrc.Close() })
	cat := hosttest.RetailSQLCatalog(t)
	rig := newPCRig(t, airlineNow, map[string]host.Domain{
		"retail":     {Catalog: cat, Source: hosttest.Docs(hosttest.RetailCollections(t))},
		"retail_sql": {Catalog: cat, Source: sqlSrc},
	})
	var tasks []tau2Task
	require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, "testdata/domains/retail/tasks.json"), &tasks))
	var subjects [][]byte
	for _, task := range tasks {
		for _, a := range task.EvaluationCriteria.Actions {
			if c, _ := cat.Capability(a.Name); abi.IsWriteKind(c.Kind) {
				b, _ := json.Marshal(abi.ToolCall{Tool: a.Name, Parameters: a.Arguments})
				subjects = append(subjects, b)
			}
		}
	}
	// Rule breakers: cancel delivered, refund elsewhere, pay with original.
	subjects = append(subjects,
		hosttest.ToolCall(t, "cancel_pending_order", map[string]any{"order_id": "#W2611340", "reason": "no longer needed"}),
		hosttest.ToolCall(t, "return_delivered_order_items", map[string]any{"order_id": "#W2611340", "item_ids": []string{"6469567736"}, "payment_method_id": "credit_card_0000000"}),
		hosttest.ToolCall(t, "modify_user_address", map[string]any{"user_id": "nobody", "address1": "", "address2": "", "city": "", "state": "", "country": "", "zip": ""}),
	)
	denied := 0
	for _, s := range subjects {
		a := rig.check(t, "retail", abi.SubjectToolCall, s)
		b := rig.check(t, "retail_sql", abi.SubjectToolCall, s)
		assert.Equal(t, a.failedIDs(), b.failedIDs(), "documents and sqlite disagree on %s", s)
		if b.Verdict == abi.Rejected {
			denied++
		}
	}
	t.Logf("%d retail writes on SQLite: %d denied, same ids as the document source", len(subjects), denied)
	assert.Equal(t, 4, denied)
}

// underCatalog keeps writes under the var root's public/ (the shape of
// testdata/mcp/fs-domain.yaml).
const underCatalog = `
domain: files
version: 4
vars: {root: {description: the served directory}}
capabilities:
  write_file:
    kind: update
    parameters: [path, content]
    preconditions:
      - {id: under_public, require: {match: {field: path, under: {var: root, join: public}}}, message: under public/ only}
  move_file:
    kind: update
    parameters: [source, destination]
    preconditions:
      - id: both_under_public
        require: {match: {all_of: [{field: source, under: {var: root, join: public}}, {field: destination, under: {var: root, join: public}}]}}
        message: within public/ only
`

// TestPreconditionsUnder: the under operator through the host, in wasm and
// natively alike, with the root a var the config binds; a capability whose
// var is not bound is unevaluable, never admitted.
func TestPreconditionsUnder(t *testing.T) {
	cat, err := domain.Parse([]byte(underCatalog))
	require.NoError(t, err)
	bound, err := cat.Bind(map[string]string{"root": "/home/public/site"})
	require.NoError(t, err)
	empty := func() datasource.DataSource { return datasource.NewDocuments(map[string]map[string]any{}) }
	rig := newPCRig(t, time.Now(), map[string]host.Domain{
		"files":   {Catalog: bound, Source: empty()},
		"unbound": {Catalog: cat, Source: empty()},
	})
	cases := []struct {
		name   string
		tool   string
		params map[string]any
		want   string // "", or the finding's code
	}{
		{"a file under public", "write_file", map[string]any{"path": "/home/public/site/public/x.txt"}, ""},
		{"public itself, trailing slash", "write_file", map[string]any{"path": "/home/public/site/public/"}, ""},
		{"cleaned into public", "write_file", map[string]any{"path": "/home/public/site/./private/../public//x"}, ""},
		{"a public/ nested elsewhere", "write_file", map[string]any{"path": "/home/public/site/private/public/x.txt"}, preconditions.CodeFailed},
		{"the tree under a directory named public", "write_file", map[string]any{"path": "/home/public/site/private/x"}, preconditions.CodeFailed},
		{"a .. escape", "write_file", map[string]any{"path": "/home/public/site/public/../private/x"}, preconditions.CodeFailed},
		{"a name that only starts like public", "write_file", map[string]any{"path": "/home/public/site/publicity/x"}, preconditions.CodeFailed},
		{"a relative path", "write_file", map[string]any{"path": "public/x"}, preconditions.CodeFailed},
		{"a path that is not a string", "write_file", map[string]any{"path": 7}, preconditions.CodeUnevaluable},
		{"no path", "write_file", map[string]any{"content": "x"}, preconditions.CodeUnevaluable},
		{"a move within public", "move_file", map[string]any{"source": "/home/public/site/public/a", "destination": "/home/public/site/public/b"}, ""},
		{"a move out of public", "move_file", map[string]any{"source": "/home/public/site/public/a", "destination": "/home/public/site/private/a"}, preconditions.CodeFailed},
		{"a move into public", "move_file", map[string]any{"source": "/home/public/site/private/a", "destination": "/home/public/site/public/a"}, preconditions.CodeFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rig.check(t, "files", abi.SubjectToolCall, hosttest.ToolCall(t, c.tool, c.params))
			if c.want == "" {
				assert.Equal(t, abi.Accepted, r.Verdict, "findings %v", r.Findings)
				return
			}
			assert.Equal(t, abi.Rejected, r.Verdict)
			require.Len(t, r.Findings, 1)
			assert.Equal(t, c.want, r.Findings[0].Code)
		})
	}
	t.Run("an unbound var denies", func(t *testing.T) {
		r := rig.check(t, "unbound", abi.SubjectToolCall, hosttest.ToolCall(t, "write_file", map[string]any{"path": "/home/public/site/public/x"}))
		assert.Equal(t, abi.Rejected, r.Verdict)
		require.Len(t, r.Findings, 1)
		assert.Equal(t, preconditions.CodeUnevaluable, r.Findings[0].Code)
		assert.Contains(t, fmt.Sprint(r.Findings[0].Message, r.Findings[0].Details), "var root, which is not bound")
	})
}
