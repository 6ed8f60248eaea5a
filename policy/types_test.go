package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/policy"
)

func TestFromJSONSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema, cedar string
		omitted             []string
	}{
		{"scalars", `{"type":"object","properties":{"s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"}},"required":["s","i"]}`,
			"{\n  \"b\"?: Bool,\n  \"i\": Long,\n  \"n\"?: decimal,\n  \"s\": String\n}", nil},
		{"enum and const are strings", `{"properties":{"e":{"enum":["a","b"]},"c":{"const":"x"}}}`,
			"{\n  \"c\"?: String,\n  \"e\"?: String\n}", nil},
		{"arrays are sets", `{"properties":{"a":{"type":"array","items":{"type":"integer"}}}}`, "{\n  \"a\"?: Set<Long>\n}", nil},
		{"objects nest", `{"properties":{"o":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}}`,
			"{\n  \"o\"?: {\n    \"x\": String\n  }\n}", nil},
		{"a free-form object is an empty record", `{"properties":{"o":{"type":"object","additionalProperties":{"type":"string"}}}}`, "{\n  \"o\"?: {}\n}", nil},
		{"a nullable type is optional", `{"properties":{"s":{"type":["string","null"]}},"required":["s"]}`, "{\n  \"s\"?: String\n}", nil},
		{"an optional in anyOf or oneOf form is a nullable type", `{"properties":{"s":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null},"n":{"oneOf":[{"type":"null","description":"none"},{"type":"array","items":{"type":"string"}}]}},"required":["s"]}`,
			"{\n  \"n\"?: Set<String>,\n  \"s\"?: String\n}", nil},
		{"other two-branch unions stay omitted", `{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]},"c":{"anyOf":[{"type":"null"},{"type":"null"}]},"d":{"type":"string","anyOf":[{"type":"string"},{"type":"null"}]},"e":{"anyOf":[{"anyOf":[]},{"type":"null"}]}}}`, "{}", []string{"a", "c", "d", "e"}},
		{"unions are omitted", `{"properties":{"u":{"type":["string","number"]},"a":{"anyOf":[{"type":"string"}]},"o":{"oneOf":[]}}}`, "{}", []string{"a", "o", "u"}},
		{"refs, untyped and itemless arrays are omitted", `{"properties":{"r":{"$ref":"#/x"},"n":{},"a":{"type":"array"},"t":{"type":"array","items":{"anyOf":[]}}}}`, "{}", []string{"a", "n", "r", "t"}},
		{"a name Cedar cannot spell bare is quoted", `{"properties":{"dry-run":{"type":"boolean"}}}`, "{\n  \"dry-run\"?: Bool\n}", nil},
		{"no schema", ``, "{}", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, om := policy.FromJSONSchema(json.RawMessage(tc.schema))
			assert.Equal(t, tc.cedar, typ.Cedar())
			var paths []string
			for _, o := range om {
				paths = append(paths, o.Path)
			}
			assert.ElementsMatch(t, tc.omitted, paths)
		})
	}
}

func TestValue(t *testing.T) {
	typ, _ := policy.FromJSONSchema(json.RawMessage(`{"properties":{"i":{"type":"integer"},"n":{"type":"number"},"s":{"type":"string"},"a":{"type":"array","items":{"type":"string"}},
		"o":{"type":["string","null"]},"p":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}`))
	dec := func(s string) any {
		d := json.NewDecoder(stringsReader(s))
		d.UseNumber()
		var v any
		require.NoError(t, d.Decode(&v))
		return v
	}
	for _, tc := range []struct {
		name, args string
		want       string // the Cedar record, or "" when the value is refused
		errPath    string
	}{
		{"integers", `{"i":2}`, `{"i":2}`, ""},
		{"an integral float is an integer", `{"i":2.0}`, `{"i":2}`, ""},
		{"a fraction is not an integer", `{"i":2.5}`, "", "i"},
		{"beyond 64 bits", `{"i":9223372036854775808}`, "", "i"},
		{"decimals keep four places", `{"n":1.2345}`, `{"n":decimal("1.2345")}`, ""},
		{"a fifth place is refused", `{"n":1.23456}`, "", "n"},
		{"a number beyond decimal's range", `{"n":1e30}`, "", "n"},
		{"a string where a number is declared", `{"n":"1"}`, "", "n"},
		{"sets drop duplicates", `{"a":["x","x"]}`, `{"a":["x"]}`, ""},
		{"a set element of the wrong type", `{"a":["x",1]}`, "", "a[1]"},
		{"undeclared properties are dropped", `{"s":"x","zz":1}`, `{"s":"x"}`, ""},
		{"null is absent where the schema allows it", `{"o":null,"p":null}`, `{}`, ""},
		{"null is refused where the schema does not allow it", `{"s":null}`, "", "s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := typ.Value(dec(tc.args), "")
			if tc.errPath != "" {
				var ae *policy.ArgumentError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tc.errPath, ae.Path)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(v.(types.Record).MarshalCedar()))
		})
	}
}
