package exec_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/plugins/exec"
)

// TestConfigSchemaToolReferences: the gate's config schema marks every
// value that names a tool, as canonical ids, "*" a wildcard in allow_tools
// only; the schema still compiles and validates with the annotations.
func TestConfigSchemaToolReferences(t *testing.T) {
	schema := exec.Gate.Descriptor.ConfigSchema
	s, err := abischema.CompileConfigSchema(schema)
	require.NoError(t, err)
	config := `{"confirm_effects": [], "confirm_tools": ["mcp.fs:edit_file", "*"], "exempt_tools": ["mcp.fs:read_file"],
	  "principals": [{"when": {"anonymous": true}, "allow_tools": ["mcp.fs:read_file"]}, {"name": "ops", "when": {"authenticated": true}, "allow_tools": ["*"]}]}`
	doc, err := abischema.Decode([]byte(config))
	require.NoError(t, err)
	require.NoError(t, abischema.SafeValidate(s, doc))
	_, err = exec.ParseConfig(json.RawMessage(config))
	require.NoError(t, err)

	refs, err := host.ConfigToolReferences("c", schema, json.RawMessage(config))
	require.NoError(t, err)
	assert.Equal(t, []host.ToolReference{
		{Field: "c.confirm_tools[0]", Name: "mcp.fs:edit_file", Kind: host.RefToolID},
		{Field: "c.confirm_tools[1]", Name: "*", Kind: host.RefToolID}, // no wildcard here: it confirms nothing
		{Field: "c.exempt_tools[0]", Name: "mcp.fs:read_file", Kind: host.RefToolID},
		{Field: "c.principals[0].allow_tools[0]", Name: "mcp.fs:read_file", Kind: host.RefToolID},
		{Field: "c.principals[1].allow_tools[0]", Name: "*", Kind: host.RefToolID, Wildcard: true},
	}, refs)
}
