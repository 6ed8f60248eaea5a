package catalog_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
)

const githubDir = "../../testdata/catalogs/github-mcp-server"

func canon(t *testing.T, in string) string {
	t.Helper()
	out, err := catalog.CanonicalJSON([]byte(in))
	require.NoError(t, err, "input %q", in)
	return string(out)
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"whitespace", " { \"b\" : [ 1 , 2 ] ,\n\t\"a\" : { } } ", `{"a":{},"b":[1,2]}`},
		{"nested sort", `{"z":{"y":1,"x":[{"b":1,"a":2}]},"a":null}`, `{"a":null,"z":{"x":[{"a":2,"b":1}],"y":1}}`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"empty", `[{},[],""]`, `[{},[],""]`},
		{"escapes", `"\u0041\/\"\\\b\f\n\r\t\u001F\u007f"`, `"A/\"\\\b\f\n\r\t\u001f` + "\x7f" + `"`},
		{"no html escaping", `"<>&\u2028\u2029"`, "\"<>&\u2028\u2029\""},
		{"unicode literal", `"\u00e9\ud83d\ude00"`, `"é😀"`},
		{"scalar top level", ` 7 `, `7`},
		// RFC 8785 §3.2.3: keys sort by UTF-16 code units, so U+1F600
		// (surrogates D83D DE00) sorts before U+FB33.
		{"utf16 order", `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, canon(t, tt.in))
		})
	}
}

func TestCanonicalNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"-0.0e5", "0"}, {"0.000", "0"},
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10E-1", "1"}, {"-1e-0", "-1"},
		{"100", "100"}, {"1e2", "100"}, {"1E+2", "100"}, {"123e-2", "1.23"},
		{"-12.50", "-12.5"}, {"0.5", "0.5"}, {"0.1", "0.1"},
		{"1e20", "100000000000000000000"}, {"1e21", "1e+21"}, {"12e20", "1.2e+21"},
		{"0.000001", "0.000001"}, {"0.0000001", "1e-7"}, {"1.5e-7", "1.5e-7"},
		{"1e0000000005", "100000"},
		// Beyond what a double holds: exact digits are kept (JCS would round
		// 9007199254740993 to 9007199254740992 and refuse 1e400).
		{"9007199254740993", "9007199254740993"},
		{"1e400", "1e+400"}, {"-1.50e-400", "-1.5e-400"},
		// RFC 8785 Appendix B outputs are fixed points.
		{"5e-324", "5e-324"}, {"1.7976931348623157e+308", "1.7976931348623157e+308"},
		{"9007199254740992", "9007199254740992"}, {"999999999999999900000", "999999999999999900000"},
		{"9.999999999999997e-7", "9.999999999999997e-7"}, {"333333333.3333333", "333333333.3333333"},
		{"-5e-324", "-5e-324"}, {"295147905179352830000", "295147905179352830000"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, canon(t, tt.in), "input %s", tt.in)
	}
}

// RFC 8785 §3.2.2's example. Our output equals JCS's except for
// 333333333.33333329, whose 17 digits we keep where JCS rounds to a double.
func TestCanonicalRFC8785Example(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	jcs := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got := canon(t, in)
	assert.Equal(t, strings.Replace(jcs, "333333333.3333333", "333333333.33333329", 1), got)
}

func TestCanonicalJSONErrors(t *testing.T) {
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	for _, in := range []string{
		``, `   `, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"b":{"x":1,"x":1}}`,
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800x"`, "\"\xff\"", "\"\xed\xa0\x80\"",
		"\xef\xbb\xbf{}", "\"\x01\"", `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `{"a":}`,
		`01`, `1.`, `.5`, `+1`, `1e`, `1e+`, `-`, `1e1234567890`, `NaN`, `Infinity`,
		`tru`, `nul`, `'a'`, `"a`, `"\u12"`, `"\x"`, `[1] 2`, `[`, `{`, deep,
	} {
		_, err := catalog.CanonicalJSON([]byte(in))
		require.ErrorIs(t, err, catalog.ErrInvalidJSON, "input %q", in)
		var e *catalog.Error
		require.ErrorAs(t, err, &e)
	}
	ok := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	_, err := catalog.CanonicalJSON([]byte(ok))
	assert.NoError(t, err, "1000 levels are allowed")
}

func TestDigestKeyOrderIndependent(t *testing.T) {
	a := `{"type":"object","properties":{"owner":{"type":"string","description":"Repository owner"},"page":{"type":"number","minimum":1}},"required":["owner"]}`
	b := "{\n  \"required\" : [\"owner\"],\n  \"properties\": {\n    \"page\": {\"minimum\": 1.0, \"type\": \"number\"},\n" +
		"    \"owner\": {\"description\": \"Repository \\u006fwner\", \"type\": \"string\"}\n  },\n  \"type\": \"object\"\n}"
	da, err := catalog.Digest([]byte(a))
	require.NoError(t, err)
	db, err := catalog.Digest([]byte(b))
	require.NoError(t, err)
	assert.Equal(t, da, db)
	assert.Len(t, da, 64)
	assert.Equal(t, strings.ToLower(da), da)

	for _, changed := range []string{
		strings.Replace(a, `"minimum":1`, `"minimum":2`, 1),
		strings.Replace(a, `["owner"]`, `["owner","page"]`, 1),
		strings.Replace(a, `"number"`, `"integer"`, 1),
	} {
		dc, err := catalog.Digest([]byte(changed))
		require.NoError(t, err)
		assert.NotEqual(t, da, dc, changed)
	}
	_, err = catalog.Digest([]byte(`{"a":1,"a":1}`))
	assert.ErrorIs(t, err, catalog.ErrInvalidJSON)
}

// Digests computed independently (Python: json.dumps(schema,
// sort_keys=True, separators=(",", ":"), ensure_ascii=False), which agrees
// with JCS for these integer-only, ASCII-keyed schemas).
func TestDigestGolden(t *testing.T) {
	for name, want := range map[string]string{
		"get_me":         "efddc7bd8bbcef73a14eb1ace1ffdaec81e518ef1e13c1e9271d0b8acb694a49",
		"create_issue":   "0133345f485008d40895287c4f6f77227130d5e26fc46c1442698329dd6d23ab",
		"projects_write": "73acbb8ab413a5098293fc940caa9d0c49357c9060ddd476a72b972ced5b7e6a",
	} {
		var tool struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		data, err := os.ReadFile(filepath.Join(githubDir, name+".json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &tool))
		got, err := catalog.Digest(tool.InputSchema)
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
	}
}

// Re-encoding every GitHub schema with encoding/json (sorted keys, HTML
// escaping, different layout) leaves its canonical form unchanged.
func TestCanonicalStableUnderReencoding(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(githubDir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 117)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(data, &v))
		re, err := json.MarshalIndent(v, "", "\t")
		require.NoError(t, err)
		assert.Equal(t, canon(t, string(data)), canon(t, string(re)), f)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1.0,2e3,-0,"x\u00e9"]}`, `[]`, `"\ud83d\ude00"`, `1e21`, `0.0000001`,
		`{"a":{"b":{"c":[true,false,null]}}}`, `{"a":1,"a":2}`, `"\u2028<>"`, `-12.50e-3`,
	} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile(filepath.Join(githubDir, "issue_write.json")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := catalog.CanonicalJSON(data)
		if err != nil {
			if !assert.ErrorIs(t, err, catalog.ErrInvalidJSON) {
				t.FailNow()
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted %q, which encoding/json rejects", data)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not JSON", out)
		}
		again, err := catalog.CanonicalJSON(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", data, out, again, err)
		}
		// Same value: the input and the output decode alike.
		var a, b any
		errA, errB := json.Unmarshal(data, &a), json.Unmarshal(out, &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("decoding differs: %v vs %v", errA, errB)
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed: %q -> %q", data, out)
		}
	})
}

func BenchmarkDigest(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(githubDir, "projects_write.json"))
	require.NoError(b, err)
	var tool struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	require.NoError(b, json.Unmarshal(data, &tool))
	b.SetBytes(int64(len(tool.InputSchema)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := catalog.Digest(tool.InputSchema); err != nil {
			b.Fatal(err)
		}
	}
}
