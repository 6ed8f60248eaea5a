package host

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
)

// schemaRig is a run context over the GitHub catalog plus tools of its own:
// one whose schema does not compile, one with the default schema, and one
// whose every member must be a string.
func schemaRig(t testing.TB, granted ...string) (*runContext, map[string]string) {
	t.Helper()
	tools, err := catalog.Load(filepath.Join("..", "testdata/catalogs/github-mcp-server"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "github"})
	require.NoError(t, err)
	tools = append(tools,
		catalog.Tool{ID: "ext.test:broken", Name: "broken", InputSchema: json.RawMessage(`{"type":"objekt"}`)},
		catalog.Tool{ID: "ext.test:plain", Name: "plain"},
		catalog.Tool{ID: "ext.test:strings", Name: "strings", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"string"}}`)})
	store, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	rc := &runContext{snap: store.Snapshot(), granted: granted, stage: "s"}
	digests := map[string]string{}
	for _, n := range []string{"issue_read", "broken", "plain"} {
		d, ok := rc.snap.SchemaDigest(n)
		require.True(t, ok, n)
		digests[n] = d
	}
	return rc, digests
}

// TestSchemaValidate drives schema.validate through the host function's
// handler (grant check included) and checks the answer byte for byte, so
// the member order and the finding order are part of the test.
func TestSchemaValidate(t *testing.T) {
	rc, dg := schemaRig(t, abi.CapabilitySchema)
	issue := `"schema_digest":"` + dg["issue_read"] + `"`
	badIssue := `{"owner":"o","issue_number":"7","method":"get"}`
	issueFindings := `"valid":false,"findings":[` +
		`{"pointer":"","keyword":"required","message":"missing properties: 'repo'"},` +
		`{"pointer":"/issue_number","keyword":"type","message":"expected number, but got string"}]`
	tests := []struct {
		name, op, req string
		want          string // the whole answer envelope; "" when wantCode is set
		wantCode      string
		wantMsg       string
	}{
		{name: "by tool id, valid", req: `{"tool":"mcp.github:issue_read","value":{"owner":"o","repo":"r","issue_number":7,"method":"get"}}`,
			want: `{"result":{"found":true,` + issue + `,"valid":true}}`},
		{name: "by wire name, invalid", req: `{"tool":"issue_read","value":` + badIssue + `}`,
			want: `{"result":{"found":true,` + issue + `,` + issueFindings + `}}`},
		{name: "by digest, same findings", req: `{` + issue + `,"value":` + badIssue + `}`,
			want: `{"result":{"found":true,` + issue + `,` + issueFindings + `}}`},
		{name: "null is a value", req: `{"tool":"issue_read","value":null}`,
			want: `{"result":{"found":true,` + issue + `,"valid":false,"findings":[{"pointer":"","keyword":"type","message":"expected object, but got null"}]}}`},
		{name: "number no tool can receive", req: `{"tool":"issue_read","value":{"issue_number":1e400}}`,
			want: `{"result":{"found":true,` + issue + `,"valid":false,"findings":[{"pointer":"/issue_number","keyword":"json","message":"number outside the range a tool can receive (IEEE 754 double, at most 100 characters)"}]}}`},
		{name: "tool without a schema of its own", req: `{"tool":"plain","value":{"any":[1]}}`,
			want: `{"result":{"found":true,"schema_digest":"` + dg["plain"] + `","valid":true}}`},
		{name: "unknown tool", req: `{"tool":"nope","value":{}}`, want: `{"result":{"found":false,"valid":false}}`},
		{name: "unknown digest", req: `{"schema_digest":"` + strings.Repeat("0", 64) + `","value":{}}`, want: `{"result":{"found":false,"valid":false}}`},
		{name: "neither tool nor digest", req: `{"value":{}}`, wantCode: abi.ErrCodeBadRequest, wantMsg: "one of tool and schema_digest"},
		{name: "both tool and digest", req: `{"tool":"issue_read",` + issue + `,"value":{}}`, wantCode: abi.ErrCodeBadRequest, wantMsg: "exclusive"},
		{name: "malformed digest", req: `{"schema_digest":"ABC","value":{}}`, wantCode: abi.ErrCodeBadRequest, wantMsg: "schema_digest"},
		{name: "no value", req: `{"tool":"issue_read"}`, wantCode: abi.ErrCodeBadRequest, wantMsg: "value: required"},
		{name: "request not JSON", req: `{"tool":`, wantCode: abi.ErrCodeBadRequest},
		{name: "tool not a string", req: `{"tool":1,"value":{}}`, wantCode: abi.ErrCodeBadRequest},
		{name: "schema does not compile", req: `{"tool":"broken","value":{}}`, wantCode: abi.ErrCodeUnavailable, wantMsg: dg["broken"]},
		{name: "unknown operation", op: "schema.compile", req: `{}`, wantCode: abi.ErrCodeUnknownOperation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := tt.op
			if op == "" {
				op = abi.OpSchemaValidate
			}
			out := calls{}.Call(context.Background(), rc, op, []byte(tt.req))
			if tt.wantCode == "" {
				assert.JSONEq(t, tt.want, string(out))
				assert.Equal(t, tt.want, string(out), "member order")
				return
			}
			var env abi.CallAnswer
			require.NoError(t, json.Unmarshal(out, &env), "%s", out)
			require.NotNil(t, env.Error, "%s", out)
			assert.Nil(t, env.Result)
			assert.Equal(t, tt.wantCode, env.Error.Code)
			assert.Contains(t, env.Error.Message, tt.wantMsg)
		})
	}
}

// TestSchemaValidateMany: each item of a schema.validate_many request is
// answered as schema.validate answers it alone, in the items' order; a
// request or item the host refuses, or an item whose schema does not
// compile, fails the whole call.
func TestSchemaValidateMany(t *testing.T) {
	rc, dg := schemaRig(t, abi.CapabilitySchema)
	items := []string{
		`{"tool":"mcp.github:issue_read","value":{"owner":"o","repo":"r","issue_number":7,"method":"get"}}`,
		`{"tool":"issue_read","value":{"owner":"o","issue_number":"7","method":"get"}}`,
		`{"tool":"nope","value":{}}`,
		`{"schema_digest":"` + dg["plain"] + `","value":{"any":[1]}}`,
		`{"tool":"issue_read","value":{"issue_number":1e400}}`,
	}
	var want []string
	for _, it := range items {
		one := calls{}.Call(context.Background(), rc, abi.OpSchemaValidate, []byte(it))
		var env abi.CallAnswer
		require.NoError(t, json.Unmarshal(one, &env))
		require.Nil(t, env.Error, "%s", one)
		want = append(want, string(env.Result))
	}
	out := calls{}.Call(context.Background(), rc, abi.OpSchemaValidateMany, []byte(`{"items":[`+strings.Join(items, ",")+`]}`))
	assert.Equal(t, `{"result":{"items":[`+strings.Join(want, ",")+`]}}`, string(out), "each item as schema.validate answers it, in order")

	many := func(n int) string {
		return `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"tool":"plain","value":{}},`, n), ",") + `]}`
	}
	res, err := schemaCapability{}.call(context.Background(), rc, abi.OpSchemaValidateMany, []byte(many(abi.MaxSchemaItems)))
	require.NoError(t, err)
	assert.Len(t, res.(abi.SchemaValidateManyAnswer).Items, abi.MaxSchemaItems)

	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name, req string
		ctx       context.Context
		code, msg string
	}{
		{name: "no items", req: `{"items":[]}`, code: abi.ErrCodeBadRequest, msg: "items: at least one"},
		{name: "items absent", req: `{}`, code: abi.ErrCodeBadRequest, msg: "items: at least one"},
		{name: "too many items", req: many(abi.MaxSchemaItems + 1), code: abi.ErrCodeBadRequest, msg: fmt.Sprintf("more than %d", abi.MaxSchemaItems)},
		{name: "an item without a value", req: `{"items":[{"tool":"plain","value":{}},{"tool":"plain"}]}`, code: abi.ErrCodeBadRequest, msg: "items[1]: value: required"},
		{name: "an item naming neither", req: `{"items":[{"value":{}}]}`, code: abi.ErrCodeBadRequest, msg: "items[0]: one of tool and schema_digest"},
		{name: "items not an array", req: `{"items":{}}`, code: abi.ErrCodeBadRequest},
		{name: "an item whose schema does not compile", req: `{"items":[{"tool":"plain","value":{}},{"tool":"broken","value":{}}]}`, code: abi.ErrCodeUnavailable, msg: "items[1]: schema " + dg["broken"]},
		{name: "the stage ended", req: many(2), ctx: done, code: abi.ErrCodeUnavailable, msg: "items[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			_, err := schemaCapability{}.call(ctx, rc, abi.OpSchemaValidateMany, []byte(tt.req))
			var ce *abi.CallError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.code, ce.Code)
			assert.Contains(t, ce.Message, abi.OpSchemaValidateMany)
			assert.Contains(t, ce.Message, tt.msg)
		})
	}
}

func TestSchemaValidateNotGranted(t *testing.T) {
	rc, _ := schemaRig(t, abi.CapabilityCatalog)
	out := calls{}.Call(context.Background(), rc, abi.OpSchemaValidate, []byte(`{"tool":"issue_read","value":{}}`))
	var env abi.CallAnswer
	require.NoError(t, json.Unmarshal(out, &env))
	require.NotNil(t, env.Error)
	assert.Equal(t, abi.ErrCodeCapabilityDenied, env.Error.Code)
	assert.Contains(t, env.Error.Message, `"schema"`)
	assert.Equal(t, []string{abi.OpSchemaValidate}, rc.deniedOps())
}

// The findings are cut at abi.MaxSchemaFindings, and the answer says so.
func TestSchemaValidateTruncates(t *testing.T) {
	rc, _ := schemaRig(t, abi.CapabilitySchema)
	for _, tc := range []struct {
		members   int
		truncated bool
	}{{abi.MaxSchemaFindings, false}, {abi.MaxSchemaFindings + 1, true}, {3 * abi.MaxSchemaFindings, true}} {
		var b strings.Builder
		b.WriteString(`{"tool":"strings","value":{`)
		for i := range tc.members {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"m%04d":%d`, i, i)
		}
		b.WriteString(`}}`)
		res, err := schemaCapability{}.call(context.Background(), rc, abi.OpSchemaValidate, []byte(b.String()))
		require.NoError(t, err)
		a := res.(abi.SchemaValidateAnswer)
		assert.False(t, a.Valid)
		assert.Len(t, a.Findings, min(tc.members, abi.MaxSchemaFindings), "%d members", tc.members)
		assert.Equal(t, tc.truncated, a.Truncated, "%d members", tc.members)
		assert.Equal(t, "/m0000", a.Findings[0].Pointer, "the first findings in order are kept")
	}
}

// FuzzSchemaValidateMany: whatever bytes a guest sends as a
// schema.validate_many request, the host answers with an error or with one
// answer per item, each the answer schema.validate gives that item alone;
// never a panic, never an answer for fewer or more items.
func FuzzSchemaValidateMany(f *testing.F) {
	rc, dg := schemaRig(f, abi.CapabilitySchema)
	f.Add([]byte(`{"items":[{"tool":"issue_read","value":{"owner":"o"}},{"tool":"nope","value":{}}]}`))
	f.Add([]byte(`{"items":[{"schema_digest":"` + dg["plain"] + `","value":[1e400]},{"tool":"broken","value":{}}]}`))
	f.Add([]byte(`{"items":[{"tool":"strings","value":{"a":1,"b":"x"}}],"items":null}`))
	f.Add([]byte(`{"items":[{"tool":"plain","value":{}}, {"value":{}}]}`))
	f.Add([]byte(`{"items":[]}`))
	f.Fuzz(func(t *testing.T, request []byte) {
		res, err := schemaCapability{}.call(context.Background(), rc, abi.OpSchemaValidateMany, request)
		if err != nil {
			var ce *abi.CallError
			require.ErrorAs(t, err, &ce)
			require.Contains(t, []string{abi.ErrCodeBadRequest, abi.ErrCodeUnavailable}, ce.Code)
			return
		}
		var req abi.SchemaValidateManyRequest
		require.NoError(t, json.Unmarshal(request, &req), "an answered request decodes")
		a := res.(abi.SchemaValidateManyAnswer)
		require.Len(t, a.Items, len(req.Items))
		for i := range req.Items {
			b, err := json.Marshal(req.Items[i])
			require.NoError(t, err)
			one, err := schemaCapability{}.call(context.Background(), rc, abi.OpSchemaValidate, b)
			require.NoError(t, err, "item %d alone", i)
			require.Equal(t, one, a.Items[i], "item %d", i)
		}
	})
}
