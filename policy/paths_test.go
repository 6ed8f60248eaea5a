package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/policy"
)

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"/srv/public/a":                  "/srv/public/a",
		"/srv/public/../secret":          "/srv/secret",
		"/srv/public/./a":                "/srv/public/a",
		"/srv//public///a":               "/srv/public/a",
		"/srv/public/a/":                 "/srv/public/a",
		"/srv/public/a/../../../../etc":  "/etc",
		`/srv/public\..\secret`:          `/srv/public\..\secret`,
		"public/../../x":                 "../x",
		"":                               "",
		"/srv/public/..":                 "/srv",
		"/srv/public/...":                "/srv/public/...",
		"/srv/public/..hidden":           "/srv/public/..hidden",
		"/srv/public/%2e%2e/secret":      "/srv/public/%2e%2e/secret",
		"/../../srv/public/x":            "/srv/public/x",
		"/srv/public/a/./b/../../../pub": "/srv/pub",
	} {
		assert.Equal(t, want, policy.CleanPath(in), in)
	}
}

func TestIsPathArgument(t *testing.T) {
	for _, n := range []string{"path", "paths", "source", "destination", "file", "dir", "directory", "root", "filePath", "file_path", "target-dir", "workingDirectory"} {
		assert.True(t, policy.IsPathArgument(n), n)
	}
	for _, n := range []string{"content", "pattern", "owner", "pathology", "sourcemap"} {
		assert.False(t, policy.IsPathArgument(n), n)
	}
}

// TestPathBypass: a write permitted under a root cannot leave it through
// "..", "." or repeated separators, nor through a backslash, which a POSIX
// server reads as a name's character and a Windows one as a separator.
func TestPathBypass(t *testing.T) {
	_, lookup := fsTools(t)
	eng := policy.NewEngine(mustSet(t, `
@id("under-public") permit(principal, action in [Action::"mcp.fs:write_file", Action::"mcp.fs:read_multiple_files"], resource)
when { context.paths has path && context.paths.path like "/srv/public/*" };
`), policy.Options{})
	for path, want := range map[string]abi.Verdict{
		"/srv/public/a.txt":                   abi.Accepted,
		"/srv//public//a.txt":                 abi.Accepted,
		"/srv/./public/./a.txt":               abi.Accepted,
		"/srv/public/x/../a.txt":              abi.Accepted,
		"/srv/public/../secret/a.txt":         abi.Rejected,
		"/srv/public/./../secret":             abi.Rejected,
		"/srv/public//..//secret":             abi.Rejected,
		"/srv/public/a/../../secret":          abi.Rejected,
		"/srv/public/../../srv/public/../etc": abi.Rejected,
		`/srv/public\..\secret`:               abi.Inconclusive,
		`/srv/public\x`:                       abi.Inconclusive, // on POSIX a file beside public/
		`/srv/secret\..\public\x`:             abi.Inconclusive, // on POSIX a file in secret/
		"//srv/public/a.txt":                  abi.Inconclusive, // a network share on Windows
		"//evil/share/../../srv/public/x":     abi.Inconclusive,
		"///srv/public/a.txt":                 abi.Inconclusive,
		"/srv/publicx/a":                      abi.Rejected,
		"/srv/public":                         abi.Rejected,
		"/srv/public/":                        abi.Rejected,
		"srv/public/a":                        abi.Rejected,
		"./srv/public/a":                      abi.Rejected,
		"":                                    abi.Rejected,
	} {
		args, _ := json.Marshal(map[string]any{"path": path, "content": "x"})
		r := eng.Evaluate(policy.Call{Tool: mustTool(t, lookup, "write_file"), Arguments: args, Now: now})
		assert.Equal(t, want, r.Response().Verdict, "%q", path)
	}
}
