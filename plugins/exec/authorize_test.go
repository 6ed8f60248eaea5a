package exec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/exec"
)

type oneTool abi.Tool

func (o oneTool) Get(name string) (abi.Tool, bool, error) {
	if name == o.Name || name == o.ID {
		return abi.Tool(o), true, nil
	}
	return abi.Tool{}, false, nil
}

type answer abi.SessionGetAnswer

func (a answer) Get(string) (abi.SessionGetAnswer, error) { return abi.SessionGetAnswer(a), nil }

// TestAuthorizePins covers checks 3 and 4 over every way a core pin and a
// grant can relate to the record: schema digest, provenance and policy
// digest, each matching or not, a pin without a policy digest (written
// before they existed) and a record without one (a host that sends none).
func TestAuthorizePins(t *testing.T) {
	rec := abi.Tool{ID: "mcp.gh:merge", Name: "merge", SchemaDigest: "S", PolicyDigest: "P", Provenance: "mcp_config{gh}", Source: "gh", Effect: "read_only"}
	grant := func(schema, policy, prov string) *abi.SessionActivation {
		return &abi.SessionActivation{Grant: abi.SessionGrant{Session: "s", Tool: rec.ID, CatalogGeneration: 4, SchemaDigest: schema, PolicyDigest: policy}, Provenance: prov}
	}
	core := func(schema, policy, prov string) *abi.SessionPin {
		return &abi.SessionPin{SchemaDigest: schema, PolicyDigest: policy, Provenance: prov}
	}
	const prov, other = "mcp_config{gh}", "plugin_config{gh}"
	for _, tc := range []struct {
		name   string
		record func(*abi.Tool)
		act    *abi.SessionActivation
		core   *abi.SessionPin
		check  int
		code   string // "" = allowed
		basis  string
	}{
		{"grant matches", nil, grant("S", "P", prov), nil, 8, "", exec.BasisExact},
		{"core matches", nil, nil, core("S", "P", prov), 8, "", exec.BasisCore},
		{"nothing pinned", nil, nil, nil, 3, exec.CodeNotActivated, ""},
		{"grant schema differs", nil, grant("X", "P", prov), nil, 3, exec.CodeSchemaDigestMismatch, ""},
		{"core schema differs", nil, nil, core("X", "P", prov), 3, exec.CodeSchemaDigestMismatch, ""},
		{"grant provenance differs", nil, grant("S", "P", other), nil, 4, exec.CodeSourceProvenanceMismatch, ""},
		{"core provenance differs", nil, nil, core("S", "P", other), 4, exec.CodeSourceProvenanceMismatch, ""},
		{"grant policy differs", nil, grant("S", "Q", prov), nil, 4, exec.CodeToolDrifted, ""},
		{"core policy differs", nil, nil, core("S", "Q", prov), 4, exec.CodeToolDrifted, ""},
		{"grant without policy digest", nil, grant("S", "", prov), nil, 4, exec.CodeToolDrifted, ""},
		{"core without policy digest", nil, nil, core("S", "", prov), 4, exec.CodeToolDrifted, ""},
		{"record without policy digest", func(t *abi.Tool) { t.PolicyDigest = "" }, grant("S", "", prov), core("S", "", prov), 4, exec.CodeToolDrifted, ""},
		{"record without policy digest, pins have one", func(t *abi.Tool) { t.PolicyDigest = "" }, grant("S", "P", prov), nil, 4, exec.CodeToolDrifted, ""},
		{"drifted grant, matching core", nil, grant("S", "Q", prov), core("S", "P", prov), 8, "", exec.BasisCore},
		{"matching grant, drifted core", nil, grant("S", "P", prov), core("S", "Q", prov), 8, "", exec.BasisExact},
		{"both drifted", nil, grant("S", "Q", prov), core("S", "", prov), 4, exec.CodeToolDrifted, ""},
		{"grant of other schema, core drifted", nil, grant("X", "P", prov), core("S", "Q", prov), 4, exec.CodeToolDrifted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec
			if tc.record != nil {
				tc.record(&r)
			}
			out, err := exec.Authorize(exec.Call{Tool: "merge", Session: "s"}, oneTool(r),
				answer{Session: "s", Known: true, Activation: tc.act, Core: tc.core}, exec.DefaultConfig())
			require.NoError(t, err)
			assert.Equal(t, tc.check, out.Check, out.Message)
			assert.Equal(t, tc.code, out.Code, out.Message)
			assert.Equal(t, tc.code == "", out.Allowed)
			assert.Equal(t, tc.basis, out.Basis)
			switch {
			case tc.code == exec.CodeToolDrifted && r.PolicyDigest == "":
				assert.Contains(t, out.Message, "carries no policy digest")
			case tc.code == exec.CodeToolDrifted:
				assert.Contains(t, out.Message, "grant", "a drift denial says to grant the tool again")
				assert.Contains(t, out.Message, "again")
			}
		})
	}
}
