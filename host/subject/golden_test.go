package subject

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/proposals/golden from the parser's output")

const fixtureDir = "../../testdata/proposals"

// fixtures maps each fixture to the format it must be detected as.
var fixtures = map[string]Format{
	"read-then-write":           FormatNative,
	"bad-args-and-unknown-tool": FormatNative,
	"openai-repeated-calls":     FormatOpenAI,
	"mcp-tools-call":            FormatMCP,
	"anthropic-tool-use":        FormatAnthropic,
	"openai-bad-arguments":      FormatOpenAI,
}

func TestGolden(t *testing.T) {
	// Every fixture is listed, so none goes untested.
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, len(fixtures))
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		require.Contains(t, fixtures, name)
	}

	for name, format := range fixtures {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtureDir, name+".json"))
			require.NoError(t, err)
			p, f, err := ParseProposal(data, FormatAuto)
			require.NoError(t, err)
			assert.Equal(t, format, f)
			requireValidNative(t, p)

			got, err := json.MarshalIndent(p, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			golden := filepath.Join(fixtureDir, "golden", name+".native.json")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create it")
			assert.Equal(t, string(want), string(got))
		})
	}
}

// The fixtures' points, checked directly so that a careless -update cannot
// bless a regression.
func TestFixtureContents(t *testing.T) {
	parse := func(name string) []want {
		data, err := os.ReadFile(filepath.Join(fixtureDir, name+".json"))
		require.NoError(t, err)
		p, _, err := ParseProposal(data, FormatAuto)
		require.NoError(t, err)
		return actionsOf(p)
	}

	bad := parse("bad-args-and-unknown-tool")
	require.Len(t, bad, 4)
	assert.Equal(t, "create_issue", bad[2].tool)
	assert.NotContains(t, bad[2].params, `"title"`)
	assert.Equal(t, "create_isue", bad[3].tool)

	repeated := parse("openai-repeated-calls")
	require.Len(t, repeated, 3)
	for _, a := range repeated {
		assert.Equal(t, repeated[0].tool, a.tool)
		assert.Equal(t, repeated[0].params, a.params)
	}
	assert.NotEqual(t, repeated[0].id, repeated[1].id)

	badArgs := parse("openai-bad-arguments")
	require.Len(t, badArgs, 1)
	assert.Equal(t, "create_issue", badArgs[0].tool)
	assert.Contains(t, badArgs[0].parseError, "not valid JSON")
	assert.Empty(t, badArgs[0].params)

	assert.Len(t, parse("anthropic-tool-use"), 2)
	assert.Len(t, parse("mcp-tools-call"), 3)
	assert.Len(t, parse("read-then-write"), 3)
}
