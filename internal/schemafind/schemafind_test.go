package schemafind

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/jsonptr"
)

func TestKeywordOf(t *testing.T) {
	for loc, want := range map[string]string{
		"":                            "",
		"/required":                   "required",
		"/properties/a/type":          "type",
		"/properties/type/enum":       "enum", // a property named like a keyword
		"/properties/properties/type": "type",
		"/properties/enum":            "properties", // false schema under properties
		"/properties/a/items/additionalProperties": "additionalProperties",
		"/properties/a/items/oneOf":                "oneOf",
		"/properties/a/anyOf/1/type":               "type",
		"/dependentRequired/type/0":                "dependentRequired",
		"/properties/a/$ref/minimum":               "minimum",
		"/allOf/0/required":                        "required",
		"/items/0/type":                            "type",
	} {
		assert.Equal(t, want, keywordOf(loc), loc)
	}
}

func schemaOf(raw string) Schema {
	return FromTool(&abi.Tool{InputSchema: json.RawMessage(raw)})
}

// manyProps is an object of n integer members p0…p(n-1).
func manyProps(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%03d":%d`, i, i)
	}
	b.WriteByte('}')
	return b.String()
}

func TestValidate(t *testing.T) {
	const obj = `{"type":"object","required":["a"],"properties":{"a":{"type":"string","maxLength":3},"n":{"type":"integer","minimum":1}},"additionalProperties":false}`
	tests := []struct {
		name      string
		schema    Schema
		value     string
		want      []abi.SchemaFinding // nil: valid
		truncated bool
		wantErr   error
	}{
		{name: "valid", schema: schemaOf(obj), value: `{"a":"abc","n":2}`},
		{name: "no schema: any value", schema: schemaOf(``), value: `[1,"x"]`},
		{name: "null schema: any value", schema: schemaOf(`null`), value: `{"a":1}`},
		{name: "null value is a value", schema: schemaOf(obj), value: `null`,
			want: []abi.SchemaFinding{{Pointer: "", Keyword: "type", Message: "expected object, but got null"}}},
		{name: "sorted by pointer, then keyword", schema: schemaOf(obj), value: `{"n":0,"a":"abcd","z":1}`,
			want: []abi.SchemaFinding{
				{Pointer: "", Keyword: "additionalProperties", Message: "properties not allowed: 'z'"},
				{Pointer: "/a", Keyword: "maxLength", Message: "length must be <= 3, but got 4"},
				{Pointer: "/n", Keyword: "minimum", Message: "value must be >= 1"},
			}},
		{name: "missing member", schema: schemaOf(obj), value: `{}`,
			want: []abi.SchemaFinding{{Pointer: "", Keyword: "required", Message: "missing properties: 'a'"}}},
		{name: "anyOf is one finding", schema: schemaOf(`{"anyOf":[{"type":"string"},{"type":"integer"}]}`), value: `1.5`,
			want: []abi.SchemaFinding{{Pointer: "", Keyword: "anyOf", Message: "value matches none of the anyOf alternatives"}}},
		{name: "number out of range, not validated further", schema: schemaOf(obj), value: `{"n":1e999,"z":[0,1e-999]}`,
			want: []abi.SchemaFinding{
				{Pointer: "/n", Keyword: "json", Message: numberMessage},
				{Pointer: "/z/1", Keyword: "json", Message: numberMessage},
			}},
		{name: "number too long, even without a schema", schema: schemaOf(``), value: `[` + strings.Repeat("1", MaxNumberLen+1) + `]`,
			want: []abi.SchemaFinding{{Pointer: "/0", Keyword: "json", Message: numberMessage}}},
		{name: "findings cut at the bound", schema: schemaOf(`{"additionalProperties":{"type":"string"}}`), value: manyProps(abi.MaxSchemaFindings + 50),
			truncated: true},
		{name: "value not JSON", schema: schemaOf(obj), value: `{"a":`, wantErr: ErrBadValue},
		{name: "two values", schema: schemaOf(obj), value: `{} {}`, wantErr: ErrBadValue},
		{name: "schema does not compile", schema: schemaOf(`{"type":"objekt"}`), value: `{}`, wantErr: ErrCompile},
		{name: "remote reference", schema: schemaOf(`{"$ref":"https://example.com/s.json"}`), value: `{}`, wantErr: ErrCompile},
		{name: "bad regex", schema: schemaOf(`{"properties":{"a":{"pattern":"("}}}`), value: `{}`, wantErr: ErrCompile},
	}
	c := NewCache(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := c.Validate(tt.schema, json.RawMessage(tt.value))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Equal(t, abi.SchemaValidateAnswer{}, a)
				return
			}
			require.NoError(t, err)
			assert.True(t, a.Found)
			assert.Equal(t, tt.truncated, a.Truncated)
			if tt.truncated {
				assert.Len(t, a.Findings, abi.MaxSchemaFindings)
				assert.False(t, a.Valid)
				return
			}
			assert.Equal(t, tt.want, a.Findings)
			assert.Equal(t, tt.want == nil, a.Valid)
		})
	}
}

// Messages name the violated bound but never echo the offending value,
// whichever keyword fails.
func TestMessagesDoNotEchoValues(t *testing.T) {
	const secret = "s3cr3t-token"
	c := NewCache(0)
	for _, tc := range []struct{ keyword, schema, value string }{
		{"minimum", `{"minimum":10}`, `7.77`},
		{"exclusiveMaximum", `{"exclusiveMaximum":1}`, `7.77`},
		{"multipleOf", `{"multipleOf":3}`, `7.77`},
		{"format", `{"format":"email"}`, `"` + secret + `"`},
		{"const", `{"const":"fixed"}`, `"` + secret + `"`},
		{"enum", `{"enum":["a","b"]}`, `"` + secret + `"`},
		{"minContains", `{"contains":{"const":1},"minContains":2}`, `["` + secret + `"]`},
		{"anyOf", `{"anyOf":[{"type":"integer"},{"maxLength":1}]}`, `"` + secret + `"`},
		{"oneOf", `{"oneOf":[{"type":"integer"},{"maxLength":1}]}`, `"` + secret + `"`},
		{"pattern", `{"pattern":"^[0-9]+$"}`, `"` + secret + `"`},
		{"maxLength", `{"maxLength":3}`, `"` + secret + `"`},
		{"not", `{"not":{"type":"string"}}`, `"` + secret + `"`},
		{"type", `{"type":"integer"}`, `7.77`},
		{"maximum", `{"maximum":1}`, `7.77`},
		{"exclusiveMinimum", `{"exclusiveMinimum":10}`, `7.77`},
		{"uniqueItems", `{"uniqueItems":true}`, `["` + secret + `","` + secret + `"]`},
		{"required", `{"required":["a"]}`, `{"b":"` + secret + `"}`},
	} {
		a, err := c.Validate(schemaOf(tc.schema), json.RawMessage(tc.value))
		require.NoError(t, err, tc.keyword)
		require.Len(t, a.Findings, 1, tc.keyword)
		f := a.Findings[0]
		assert.Equal(t, tc.keyword, f.Keyword)
		assert.NotContains(t, f.Message, secret, tc.keyword)
		assert.NotContains(t, f.Message, "7.77", tc.keyword)
	}
}

// Every schema of the GitHub catalog compiles.
func TestGitHubSchemasCompile(t *testing.T) {
	files, err := filepath.Glob("../../testdata/catalogs/github-mcp-server/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	c := NewCache(0)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var mcp struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		require.NoError(t, json.Unmarshal(b, &mcp), f)
		s := schemaOf(string(mcp.InputSchema))
		require.NotNil(t, s.Raw, f)
		_, err = c.schema(s.Key, s.Raw)
		require.NoError(t, err, f)
	}
}

func TestCacheBoundAndLRU(t *testing.T) {
	c := NewCache(8)
	key := func(i int) string { return "k" + strconv.Itoa(i) }
	raw := func(i int) func() []byte {
		return func() []byte { return []byte(`{"maxProperties":` + strconv.Itoa(i) + `}`) }
	}
	for i := range 8 {
		_, err := c.schema(key(i), raw(i))
		require.NoError(t, err)
	}
	// k0 is used again, so k1 is now the least recently used.
	_, err := c.schema(key(0), func() []byte { t.Fatal("k0 recompiled"); return nil })
	require.NoError(t, err)
	for i := 8; i < 12; i++ {
		_, err := c.schema(key(i), raw(i))
		require.NoError(t, err)
	}
	assert.Equal(t, 8, c.Len())
	assert.EqualValues(t, 12, c.Compiles())
	_, err = c.schema(key(0), func() []byte { t.Fatal("k0 evicted though recently used"); return nil })
	require.NoError(t, err)
	_, err = c.schema(key(1), raw(1))
	require.NoError(t, err)
	assert.EqualValues(t, 13, c.Compiles(), "k1 was evicted and compiled again")
}

// A schema compiles once however many callers want it at once, and a
// compile error is remembered like a schema.
func TestCacheCompilesOncePerKey(t *testing.T) {
	c := NewCache(0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Validate(schemaOf(`{"type":"object"}`), json.RawMessage(`{}`))
			assert.NoError(t, err)
			_, err = c.Validate(schemaOf(`{"type":"objekt"}`), json.RawMessage(`{}`))
			assert.ErrorIs(t, err, ErrCompile)
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 2, c.Compiles())
}

func TestKey(t *testing.T) {
	d := strings.Repeat("ab", 32)
	assert.Equal(t, d, Key(d, []byte(`{}`)))
	assert.Equal(t, `raw:{}`, Key("not-a-digest", []byte(`{}`)))
	assert.Equal(t, `raw:{}`, Key(strings.ToUpper(d), []byte(`{}`)), "an upper-case digest is not a digest")
}

// FuzzValidate: whatever the value bytes, Validate answers or refuses with
// ErrBadValue; it never panics, and an answer is consistent: findings in
// order, once each, each with a keyword, a message and a pointer that is
// RFC 6901 syntax.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"x","n":1}`, `{"n":1e999}`, `[` + strings.Repeat("[", 100), `{"a":"\ud800"}`, `null`, `{"n":-0.0e-400}`,
		`{"a":"a@b.c","n":3,"l":["x",-1,{}],"t":true}`, `{"a/b~":1,"é":[1,1],"k":{"":null}}`, `{"d":1,"n":"3","o":{"x":1,"y":2}}`} {
		f.Add([]byte(s))
	}
	schemas := []Schema{
		schemaOf(`{"type":"object","properties":{"a":{"type":"string","format":"email"},"n":{"type":"integer","multipleOf":3},"l":{"type":"array","items":{"anyOf":[{"type":"string"},{"minimum":0}]}}},"additionalProperties":{"type":"boolean"}}`),
		schemaOf(`{"$defs":{"pos":{"type":"number","exclusiveMinimum":0}},"type":"object","propertyNames":{"maxLength":4},` +
			`"dependentRequired":{"d":["n","o"]},"required":["k"],"properties":{"n":{"$ref":"#/$defs/pos"},"é":{"uniqueItems":true,"contains":{"const":2},"maxItems":3},` +
			`"o":{"oneOf":[{"required":["x"]},{"required":["y"]}],"not":{"maxProperties":0}},"k":{"enum":[{"":null},"k"]},"a/b~":false},` +
			`"patternProperties":{"^t":{"pattern":"^[a-z]+$"}},"unevaluatedProperties":{"type":"integer","maximum":9}}`),
	}
	c := NewCache(0)
	f.Fuzz(func(t *testing.T, value []byte) {
		for _, s := range schemas {
			a, err := c.Validate(s, value)
			if err != nil {
				require.ErrorIs(t, err, ErrBadValue)
				return
			}
			require.True(t, a.Found)
			require.Equal(t, a.Valid, len(a.Findings) == 0)
			require.LessOrEqual(t, len(a.Findings), abi.MaxSchemaFindings)
			for i, x := range a.Findings {
				_, err := jsonptr.Split(x.Pointer)
				require.NoError(t, err, x.Pointer)
				require.NotEmpty(t, x.Message)
				if x.Keyword != "json" {
					require.NotEmpty(t, x.Keyword, "%+v", x)
				}
				if i > 0 {
					p := a.Findings[i-1]
					require.Negative(t, cmpFinding(p, x), "%+v before %+v", p, x)
				}
			}
		}
	})
}

func cmpFinding(a, b abi.SchemaFinding) int {
	return cmp.Or(strings.Compare(a.Pointer, b.Pointer), strings.Compare(a.Keyword, b.Keyword), strings.Compare(a.Message, b.Message))
}

// A value with one long member name over many offending elements: each
// finding's pointer repeats the name, so findings built for every element
// cost the product of the two. The answer is cut where its pointers pass
// abi.MaxSchemaPointerBytes (or, on the validator's path, refused past a
// bound), so the long name costs memory linear in its length, whatever the
// number of elements: against the same value under a one-byte name, at
// most the pointer bounds and a few copies of the name more.
func TestLongNamesCostLinearMemory(t *testing.T) {
	const name, elems = 64 << 10, 8000
	list := func(elem string) string { return strings.TrimSuffix(strings.Repeat(elem+",", elems), ",") }
	allocated := func(s Schema, value string) (abi.SchemaValidateAnswer, error, uint64) {
		c := NewCache(0)
		_, _ = c.Validate(s, json.RawMessage(`{}`)) // compiled outside the measure
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a, err := c.Validate(s, json.RawMessage(value))
		runtime.ReadMemStats(&after)
		return a, err, after.TotalAlloc - before.TotalAlloc
	}
	for _, tc := range []struct {
		what   string
		schema Schema
		elem   string
		valid  bool
	}{
		{"numbers no tool can receive", schemaOf(`{"type":"object"}`), "1e400", false},
		{"numbers in range", schemaOf(`{"type":"object"}`), "1", true},
		{"a violation per element", schemaOf(`{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}`), "1", false},
	} {
		t.Run(tc.what, func(t *testing.T) {
			_, _, short := allocated(tc.schema, `{"k":[`+list(tc.elem)+`]}`)
			a, err, long := allocated(tc.schema, `{"`+strings.Repeat("k", name)+`":[`+list(tc.elem)+`]}`)
			bound := short + 2*maxViolationPointerBytes + 16*name
			assert.Less(t, long, bound, "a %d-byte name allocated %d bytes, against %d under a one-byte name", name, long, short)
			if err != nil {
				require.ErrorIs(t, err, ErrValidator, "past the bound, an error, never an answer")
				return
			}
			assert.Equal(t, tc.valid, a.Valid)
			if tc.valid {
				return
			}
			assert.True(t, a.Truncated)
			bytes := 0
			for _, f := range a.Findings[:len(a.Findings)-1] {
				bytes += len(f.Pointer)
			}
			assert.LessOrEqual(t, bytes, abi.MaxSchemaPointerBytes, "the pointers before the last one")
		})
	}
}
