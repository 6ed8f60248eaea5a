package staticverify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/editdist"
)

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"create_issue", "create_isue", 1},
		{"create_issue", "craete_issue", 2},
		{"get_me", "get_me", 0},
		{"héllo", "hello", 1}, // runes, not bytes
		{"flaw", "lawn", 2},
	} {
		assert.Equal(t, tc.want, editdist.Levenshtein(tc.a, tc.b), "%q %q", tc.a, tc.b)
		assert.Equal(t, tc.want, editdist.Levenshtein(tc.b, tc.a), "%q %q", tc.b, tc.a)
	}
}

func TestSuggest(t *testing.T) {
	tools := []abi.ToolEntry{
		{ID: "mcp.github:create_issue", Name: "create_issue"},
		{ID: "mcp.github:create_branch", Name: "create_branch", Aliases: []string{"new_branch"}},
		{ID: "mcp.github:get_me", Name: "get_me"},
		{ID: "mcp.github:list_issues", Name: "list_issues"},
		{ID: "mcp.github:list_issue_types", Name: "list_issue_types"},
	}
	for name, want := range map[string]string{
		"create_isue":             "create_issue",
		"CREATE_ISSUE":            "create_issue", // case slips first
		"mcp.github:create_isue":  "create_issue", // an id spelling suggests the wire name
		"new_brnch":               "create_branch",
		"list_issue":              "list_issues",
		"get_mee":                 "get_me",
		"launch_missiles":         "",
		"x":                       "",
		"":                        "",
		strings.Repeat("a", 4096): "",
	} {
		assert.Equal(t, want, suggest(name, tools), "%.40q", name)
	}
}

func TestCheckPrecondition(t *testing.T) {
	state := map[string]any{
		"n": 5.0, "s": "main", "arr": []any{"bug", 1.0}, "obj": map[string]any{"a": 1.0},
		"null": nil, "t": true,
	}
	for _, tc := range []struct {
		key, op string
		value   any
		ok      bool
		why     string
	}{
		{"n", "eq", 5.0, true, ""},
		{"n", "eq", "5", false, "differs"},
		{"null", "eq", nil, true, ""},
		{"obj", "eq", map[string]any{"a": 1.0}, true, ""},
		{"arr", "eq", []any{"bug", 1.0}, true, ""},
		{"arr", "eq", []any{1.0, "bug"}, false, "differs"},
		{"n", "neq", 6.0, true, ""},
		{"n", "neq", 5.0, false, "equal"},
		{"absent", "neq", 5.0, false, "not set"},
		{"null", "exists", nil, true, ""},
		{"absent", "exists", nil, false, "not set"},
		{"absent", "not_exists", nil, true, ""},
		{"n", "not_exists", nil, false, "is set"},
		{"s", "contains", "ai", true, ""},
		{"s", "contains", 1.0, false, "cannot apply contains"},
		{"arr", "contains", 1.0, true, ""},
		{"arr", "contains", "1", false, "does not contain"},
		{"obj", "contains", "a", true, ""},
		{"obj", "contains", "b", false, "does not have"},
		{"t", "contains", true, false, "cannot apply contains to boolean"},
		{"n", "gt", 4.0, true, ""},
		{"n", "gt", 5.0, false, "comparison is false"},
		{"n", "lt", 6.0, true, ""},
		{"n", "gte", 5.0, true, ""},
		{"n", "lte", 5.0, true, ""},
		{"n", "lte", 4.9, false, "comparison is false"},
		{"s", "gt", 1.0, false, "cannot compare"},
		{"n", "lt", "9", false, "cannot compare"},
		{"null", "gte", nil, false, "cannot compare"},
		{"absent", "gt", 1.0, false, "not set"},
		{"n", "GT", 1.0, false, "unknown operator"},
		{"n", "between", 1.0, false, "unknown operator"},
	} {
		ok, why := checkPrecondition(state, tc.key, tc.op, tc.value)
		assert.Equal(t, tc.ok, ok, "%s %s %v", tc.key, tc.op, tc.value)
		if !tc.ok {
			assert.Contains(t, why, tc.why, "%s %s %v", tc.key, tc.op, tc.value)
		}
	}
}

func TestCanonical(t *testing.T) {
	enc := func(s string) string {
		v, err := decodeParams(json.RawMessage(s))
		assert.NoError(t, err)
		return string(canonical(nil, v))
	}
	assert.Equal(t, enc(`{"a":1,"b":[true,null,"x"]}`), enc(` { "b" : [true, null, "x"], "a": 1.0 } `))
	assert.Equal(t, enc(`{"n":100}`), enc(`{"n":1e2}`))
	assert.NotEqual(t, enc(`{"n":1}`), enc(`{"n":"1"}`))
	assert.NotEqual(t, enc(`{"n":9007199254740993}`), enc(`{"n":9007199254740992}`)) // beyond float64
	assert.NotEqual(t, enc(`{"n":1e-400}`), enc(`{"n":0}`))                          // underflow
	assert.NotEqual(t, enc(`["a,b"]`), enc(`["a","b"]`))
	// Lengths come first: no string can end early or swallow what follows.
	assert.NotEqual(t, enc(`["a\",\"b"]`), enc(`["a","b"]`))
	assert.NotEqual(t, enc(`{"a":"1","b":"2"}`), enc(`{"a":"1\",\"b\":\"2"}`))
	assert.NotEqual(t, enc(`{"a:1":1}`), enc(`{"a":"1:1"}`))
	assert.NotEqual(t, enc(`["12:ab"]`), enc(`["1","2:ab"]`))
}

func TestParseConfig(t *testing.T) {
	c, err := parseConfig(nil)
	assert.NoError(t, err)
	assert.Equal(t, Config{MaxActions: 100, RepeatedCallThreshold: 3}, c)
	c, err = parseConfig(json.RawMessage(`{"max_actions": 5, "repeated_call_threshold": 2}`))
	assert.NoError(t, err)
	assert.Equal(t, Config{MaxActions: 5, RepeatedCallThreshold: 2}, c)
	for _, bad := range []string{`{"max_actions":0}`, `{"repeated_call_threshold":1}`, `{"x":1}`, `[]`, `{"max_actions":"5"}`, `{} {}`} {
		_, err := parseConfig(json.RawMessage(bad))
		assert.Error(t, err, bad)
	}
}

// The descriptor's config schema is what the host validates stage config
// with; keep it in step with parseConfig's defaults.
func TestDescriptor(t *testing.T) {
	d := Gate.Descriptor
	assert.Equal(t, "static-verify", d.Name)
	assert.Equal(t, "1.0.0", d.Version)
	assert.Equal(t, []abi.SubjectKind{abi.SubjectProposal}, d.SubjectKinds)
	assert.Equal(t, []string{"catalog", "schema"}, d.Capabilities)
	var s struct {
		Properties map[string]struct {
			Default int `json:"default"`
			Minimum int `json:"minimum"`
		} `json:"properties"`
		AdditionalProperties bool `json:"additionalProperties"`
	}
	assert.NoError(t, json.Unmarshal(d.ConfigSchema, &s))
	assert.Equal(t, DefaultMaxActions, s.Properties["max_actions"].Default)
	assert.Equal(t, 1, s.Properties["max_actions"].Minimum)
	assert.Equal(t, DefaultRepeatedCallThreshold, s.Properties["repeated_call_threshold"].Default)
	assert.Equal(t, 2, s.Properties["repeated_call_threshold"].Minimum)
	assert.False(t, s.AdditionalProperties)
}
