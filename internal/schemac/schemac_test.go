package schemac_test

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/schemac"
)

func TestCompileSettings(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		doc     any
		valid   bool
		compile error // non-nil: Compile must fail, wrapping this when not errAny
	}{
		{name: "draft 2020-12 by default (prefixItems)", schema: `{"prefixItems":[{"type":"string"}]}`, doc: []any{1.0}, valid: false},
		{name: "draft 2020-12 accepts what it should", schema: `{"prefixItems":[{"type":"string"}]}`, doc: []any{"a"}, valid: true},
		{name: "a named draft is honoured", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, doc: []any{1.0}, valid: false},
		{name: "format is asserted", schema: `{"type":"string","format":"email"}`, doc: "not an address", valid: false},
		{name: "a valid format passes", schema: `{"type":"string","format":"email"}`, doc: "a@example.com", valid: true},
		{name: "local reference", schema: `{"$defs":{"n":{"type":"number"}},"$ref":"#/$defs/n"}`, doc: "x", valid: false},
		{name: "remote reference refused", schema: `{"$ref":"https://example.com/s.json"}`, compile: schemac.ErrRemoteRef},
		{name: "relative reference refused", schema: `{"$ref":"other.json"}`, compile: schemac.ErrRemoteRef},
		{name: "file reference refused", schema: `{"$ref":"file:///etc/passwd"}`, compile: schemac.ErrRemoteRef},
		{name: "not a schema", schema: `{"type":12}`, compile: errAny},
		{name: "not JSON", schema: `{`, compile: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := schemac.Compile("https://schemas.gatehost.invalid/test.json", []byte(tt.schema))
			if tt.compile != nil {
				require.Error(t, err)
				if tt.compile != errAny {
					assert.ErrorIs(t, err, tt.compile)
				}
				return
			}
			require.NoError(t, err)
			err = s.Validate(tt.doc)
			if tt.valid {
				assert.NoError(t, err)
			} else {
				var ve *jsonschema.ValidationError
				assert.ErrorAs(t, err, &ve)
			}
		})
	}
}

var errAny = schemaErr("any")

type schemaErr string

func (e schemaErr) Error() string { return string(e) }

// TestNewCompilerSeveralResources: resources added to one compiler may
// refer to each other; anything else is still refused.
func TestNewCompilerSeveralResources(t *testing.T) {
	c := schemac.NewCompiler()
	require.NoError(t, c.AddResource("a.json", strings.NewReader(`{"$ref":"b.json"}`)))
	require.NoError(t, c.AddResource("b.json", strings.NewReader(`{"type":"integer"}`)))
	s, err := c.Compile("a.json")
	require.NoError(t, err)
	assert.Error(t, s.Validate("x"))
	assert.NoError(t, s.Validate(1.0))
	require.NoError(t, c.AddResource("c.json", strings.NewReader(`{"$ref":"d.json"}`)))
	_, err = c.Compile("c.json")
	assert.ErrorIs(t, err, schemac.ErrRemoteRef)
}
