package schemafind

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

const draft7 = `"$schema":"http://json-schema.org/draft-07/schema#",`

// TestKinds: each kind of violation the validator reports, as the finding
// (keyword, pointer, message) it becomes.
func TestKinds(t *testing.T) {
	// f is a finding: pointer, keyword, message.
	type f struct{ pointer, keyword, message string }
	tests := []struct {
		name, schema, value string
		want                []f
	}{
		// Types and values.
		{"type", `{"type":"string"}`, `1`, []f{{"", "type", "expected string, but got number"}}},
		{"type, several", `{"type":["string","integer"]}`, `1.5`, []f{{"", "type", "expected integer or string, but got number"}}},
		{"type, integer", `{"type":"integer"}`, `1.5`, []f{{"", "type", "expected integer, but got number"}}},
		{"const", `{"const":"fixed"}`, `"x"`, []f{{"", "const", `value must be "fixed"`}}},
		{"const number", `{"const":5}`, `6`, []f{{"", "const", "value must be 5"}}},
		{"const object", `{"const":{"a":1}}`, `{"a":2}`, []f{{"", "const", "const failed"}}},
		{"enum", `{"enum":["a","b",1,true]}`, `"x"`, []f{{"", "enum", `value must be one of "a", "b", 1, true`}}},
		{"enum of one", `{"enum":[null]}`, `0`, []f{{"", "enum", "value must be null"}}},
		{"enum with an array", `{"enum":["a",[1]]}`, `"x"`, []f{{"", "enum", "enum failed"}}},
		{"format", `{"format":"email"}`, `"nope"`, []f{{"", "format", "value is not a valid 'email'"}}},
		{"format date", `{"format":"date"}`, `"2026-13-01"`, []f{{"", "format", "value is not a valid 'date'"}}},
		// Numbers: the bound, never the value.
		{"minimum", `{"minimum":1}`, `0`, []f{{"", "minimum", "value must be >= 1"}}},
		{"maximum", `{"maximum":3}`, `4`, []f{{"", "maximum", "value must be <= 3"}}},
		{"exclusiveMinimum", `{"exclusiveMinimum":0}`, `0`, []f{{"", "exclusiveMinimum", "value must be > 0"}}},
		{"exclusiveMaximum", `{"exclusiveMaximum":1.5}`, `2`, []f{{"", "exclusiveMaximum", "value must be < 1.5"}}},
		{"multipleOf", `{"multipleOf":2}`, `3`, []f{{"", "multipleOf", "value is not a multiple of 2"}}},
		{"draft-07 exclusiveMinimum", `{` + draft7 + `"exclusiveMinimum":2}`, `2`, []f{{"", "exclusiveMinimum", "value must be > 2"}}},
		// Strings.
		{"minLength", `{"minLength":3}`, `"ab"`, []f{{"", "minLength", "length must be >= 3, but got 2"}}},
		{"maxLength counts characters", `{"maxLength":1}`, `"héé"`, []f{{"", "maxLength", "length must be <= 1, but got 3"}}},
		{"pattern", `{"pattern":"^a"}`, `"b"`, []f{{"", "pattern", "does not match pattern '^a'"}}},
		// Arrays.
		{"minItems", `{"minItems":2}`, `[1]`, []f{{"", "minItems", "minimum 2 items required, but found 1 items"}}},
		{"maxItems", `{"maxItems":1}`, `[1,2]`, []f{{"", "maxItems", "maximum 1 items required, but found 2 items"}}},
		{"uniqueItems", `{"uniqueItems":true}`, `[1,2,1.0]`, []f{{"", "uniqueItems", "items at index 0 and 2 are equal"}}},
		{"contains", `{"contains":{"type":"string"}}`, `[1,2]`, []f{{"", "minContains", "too few items match the contains schema: valid must be >= 1, but got 0"}}},
		{"minContains", `{"contains":{"type":"string"},"minContains":2}`, `["a",1]`, []f{{"", "minContains", "too few items match the contains schema: valid must be >= 2, but got 1"}}},
		{"maxContains", `{"contains":{"type":"string"},"maxContains":1}`, `["a","b"]`, []f{{"", "maxContains", "valid must be <= 1, but got 2"}}},
		{"draft-07 additionalItems", `{` + draft7 + `"items":[{}],"additionalItems":false}`, `[1,2,3]`, []f{{"", "additionalItems", "only 1 items are allowed, but found 3 items"}}},
		// Objects.
		{"minProperties", `{"minProperties":2}`, `{"a":1}`, []f{{"", "minProperties", "minimum 2 properties allowed, but found 1 properties"}}},
		{"maxProperties", `{"maxProperties":1}`, `{"a":1,"b":2}`, []f{{"", "maxProperties", "maximum 1 properties allowed, but found 2 properties"}}},
		{"required", `{"required":["b","a","c"]}`, `{"c":1}`, []f{{"", "required", "missing properties: 'b', 'a'"}}},
		{"dependentRequired, one per member", `{"dependentRequired":{"a":["c","b"]}}`, `{"a":1}`, []f{
			{"", "dependentRequired", "property 'b' is required, if 'a' property exists"},
			{"", "dependentRequired", "property 'c' is required, if 'a' property exists"},
		}},
		{"draft-07 dependencies", `{` + draft7 + `"dependencies":{"a":["b"]}}`, `{"a":1}`, []f{{"", "dependencies", "property 'b' is required, if 'a' property exists"}}},
		{"dependentSchemas", `{"dependentSchemas":{"a":{"required":["b"]}}}`, `{"a":1}`, []f{{"", "required", "missing properties: 'b'"}}},
		{"additionalProperties, names sorted", `{"properties":{"a":{}},"additionalProperties":false}`, `{"z":1,"a":1,"it's":1,"b\"c":1}`, []f{{"", "additionalProperties", `properties not allowed: 'b"c', 'it\'s', 'z'`}}},
		{"additionalProperties schema", `{"additionalProperties":{"type":"string"}}`, `{"n":1}`, []f{{"/n", "type", "expected string, but got number"}}},
		{"propertyNames: at the member", `{"propertyNames":{"maxLength":2}}`, `{"abc":1,"ok":2}`, []f{{"/abc", "maxLength", "length must be <= 2, but got 3"}}},
		{"propertyNames false", `{"propertyNames":false}`, `{"a/b":1}`, []f{{"/a~1b", "propertyNames", "value not allowed here (false schema under propertyNames)"}}},
		// Combinators and references.
		{"not", `{"not":{"type":"string"}}`, `"x"`, []f{{"", "not", "not failed"}}},
		{"anyOf", `{"anyOf":[{"type":"string"},{"minimum":5}]}`, `1`, []f{{"", "anyOf", "value matches none of the anyOf alternatives"}}},
		{"oneOf, none", `{"oneOf":[{"type":"string"},{"minimum":5}]}`, `1`, []f{{"", "oneOf", "value matches none of the oneOf alternatives"}}},
		{"oneOf, two", `{"oneOf":[{"type":"number"},{"minimum":0}]}`, `1`, []f{{"", "oneOf", "valid against schemas at indexes 0 and 1"}}},
		{"allOf: each branch's own", `{"allOf":[{"required":["a"]},{"maxProperties":0}]}`, `{"b":1}`, []f{
			{"", "maxProperties", "maximum 0 properties allowed, but found 1 properties"},
			{"", "required", "missing properties: 'a'"},
		}},
		{"if-then", `{"if":{"required":["a"]},"then":{"required":["b"]}}`, `{"a":1}`, []f{{"", "required", "missing properties: 'b'"}}},
		{"if-else", `{"if":{"required":["a"]},"else":{"type":"null"}}`, `{}`, []f{{"", "type", "expected null, but got object"}}},
		{"$ref", `{"$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":"x"}`, []f{{"/a", "type", "expected integer, but got string"}}},
		{"$ref to a $ref", `{"$defs":{"n":{"$ref":"#/$defs/m"},"m":{"minimum":1}},"$ref":"#/$defs/n"}`, `0`, []f{{"", "minimum", "value must be >= 1"}}},
		// False schemas: the applicator holding one.
		{"false under properties", `{"properties":{"a":false}}`, `{"a":1}`, []f{{"/a", "properties", "value not allowed here (false schema under properties)"}}},
		{"false under a property named like a keyword", `{"properties":{"items":false}}`, `{"items":1}`, []f{{"/items", "properties", "value not allowed here (false schema under properties)"}}},
		{"false under items", `{"items":false}`, `[1]`, []f{{"/0", "items", "value not allowed here (false schema under items)"}}},
		{"false under prefixItems", `{"prefixItems":[{},false]}`, `[1,2]`, []f{{"/1", "prefixItems", "value not allowed here (false schema under prefixItems)"}}},
		{"false under patternProperties", `{"patternProperties":{"^x":false}}`, `{"xy":1}`, []f{{"/xy", "patternProperties", "value not allowed here (false schema under patternProperties)"}}},
		{"false under additionalProperties schema", `{"properties":{"a":{}},"additionalProperties":{"not":{}}}`, `{"b":1}`, []f{{"/b", "not", "not failed"}}},
		{"false through $ref", `{"$defs":{"no":false},"properties":{"a":{"$ref":"#/$defs/no"}}}`, `{"a":1}`, []f{{"/a", "$ref", "value not allowed here (false schema under $ref)"}}},
		{"false under then", `{"if":{"required":["a"]},"then":false}`, `{"a":1}`, []f{{"", "then", "value not allowed here (false schema under then)"}}},
		{"false under allOf", `{"allOf":[true,false]}`, `1`, []f{{"", "allOf", "value not allowed here (false schema under allOf)"}}},
		{"false under unevaluatedProperties", `{"properties":{"a":{}},"unevaluatedProperties":false}`, `{"a":1,"b":2}`, []f{{"/b", "unevaluatedProperties", "value not allowed here (false schema under unevaluatedProperties)"}}},
		{"false under unevaluatedItems", `{"prefixItems":[{}],"unevaluatedItems":false}`, `[1,2]`, []f{{"/1", "unevaluatedItems", "value not allowed here (false schema under unevaluatedItems)"}}},
		{"false schema", `false`, `1`, []f{{"", "", "value not allowed here (false schema under )"}}},
		// Pointers: RFC 6901 escapes, raw UTF-8, array indexes.
		{"pointer escapes", `{"additionalProperties":{"type":"string"}}`, `{"a/b":1,"m~n":2,"~1":3,"/~":4,"x y":5,"":6,"ünï 名":7}`, []f{
			{"/", "type", "expected string, but got number"},
			{"/a~1b", "type", "expected string, but got number"},
			{"/m~0n", "type", "expected string, but got number"},
			{"/x y", "type", "expected string, but got number"},
			{"/~01", "type", "expected string, but got number"},
			{"/~1~0", "type", "expected string, but got number"},
			{"/ünï 名", "type", "expected string, but got number"},
		}},
		{"pointer through arrays", `{"items":{"properties":{"é/~":{"items":{"type":"string"}}}}}`, `[{},{"é/~":["a",1]}]`, []f{{"/1/é~1~0/1", "type", "expected string, but got number"}}},
		{"property named like a keyword", `{"properties":{"type":{"enum":["a"]}}}`, `{"type":"b"}`, []f{{"/type", "enum", `value must be "a"`}}},
	}
	c := NewCache(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := c.Validate(schemaOf(tt.schema), json.RawMessage(tt.value))
			require.NoError(t, err)
			want := make([]abi.SchemaFinding, len(tt.want))
			for i, w := range tt.want {
				want[i] = abi.SchemaFinding{Pointer: w.pointer, Keyword: w.keyword, Message: w.message}
			}
			assert.Equal(t, want, a.Findings)
			assert.False(t, a.Valid)
		})
	}
}

// A reference cycle is the validator's failure, not the value's.
func TestRefCycleIsValidatorError(t *testing.T) {
	s := schemaOf(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`)
	_, err := NewCache(0).Validate(s, json.RawMessage(`1`))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrValidator)
}

// Explain: a value that does not match is a one-line *ValidationError
// naming the first violation; an error that is not the validator's wraps
// ErrValidator.
func TestExplain(t *testing.T) {
	s, err := compile([]byte(`{"properties":{"a":{"type":"string"},"b":{"minimum":1}}}`))
	require.NoError(t, err)
	v := map[string]any{"a": json.Number("1"), "b": json.Number("0")}
	err = Explain(s.Location, v, s.Validate(v))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Violations, 2)
	assert.Equal(t, []string{"a"}, ve.Violations[0].Instance)
	assert.Equal(t, `does not match schema https://schemas.gatehost.invalid/tool.json: at "/a": type: expected string, but got number (and 1 more)`, err.Error())

	_, err = Violations(nil, assert.AnError)
	assert.ErrorIs(t, err, ErrValidator)
}

// Without the value, an additionalItems violation is worded from its count.
func TestAdditionalItemsWithoutValue(t *testing.T) {
	s, err := compile([]byte(`{` + draft7 + `"items":[{}],"additionalItems":false}`))
	require.NoError(t, err)
	vs, err := Violations(nil, s.Validate([]any{1.0, 2.0, 3.0}))
	require.NoError(t, err)
	require.Len(t, vs, 1)
	assert.Equal(t, "2 additional items not allowed", vs[0].Message)
}
