// Package schemac compiles JSON Schemas with the project's settings, the
// one place they are chosen: the ABI's own schemas, gates' config schemas,
// tools' input schemas (the catalog check and the host's schema
// capability, internal/schemafind) and the native proposal schema. It
// depends on the validator only.
package schemac

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrRemoteRef is the error of a $ref to a document that was not added to
// the compiler: schemas must be self-contained, since fetching one would
// give a gate a network and make a verdict depend on it.
var ErrRemoteRef = errors.New("remote reference not allowed")

// Compiler compiles schema resources with the project's settings.
type Compiler struct {
	c *jsonschema.Compiler
}

// NewCompiler returns a compiler with the project's settings: draft 2020-12
// unless a schema's $schema names another (MCP tools' schemas rarely name
// one), format assertions on (a schema's every keyword is checked,
// "format" included), and a loader that refuses every document: a
// reference outside the added resources fails with ErrRemoteRef.
func NewCompiler() *Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	return &Compiler{c: c}
}

// refuseLoader loads no document, whatever its scheme (file: included).
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %q", ErrRemoteRef, url)
}

// AddResource adds the schema document read from r, addressed as url. The
// document is decoded as the validator wants it: numbers as json.Number,
// one value and nothing after it.
func (c *Compiler) AddResource(url string, r io.Reader) error {
	doc, err := jsonschema.UnmarshalJSON(r)
	if err != nil {
		return fmt.Errorf("schema %s is not JSON: %w", url, err)
	}
	return c.c.AddResource(url, doc)
}

// Compile compiles the schema at url, a resource added before or a
// fragment of one. Errors are the validator's (a
// *jsonschema.SchemaValidationError for a schema that is not valid against
// its metaschema, say), except that a reference to a document that was not
// added is an error wrapping ErrRemoteRef: the validator's own error for it
// wraps nothing.
func (c *Compiler) Compile(url string) (*jsonschema.Schema, error) {
	s, err := c.c.Compile(url)
	if err != nil {
		var le *jsonschema.LoadURLError
		if errors.As(err, &le) && errors.Is(le.Err, ErrRemoteRef) {
			return nil, le.Err
		}
		return nil, err
	}
	return s, nil
}

// Compile compiles the one self-contained schema document raw, addressed as
// url (which anchors relative references and names it in errors), with
// NewCompiler's settings. Errors are as Compiler.Compile's.
func Compile(url string, raw []byte) (*jsonschema.Schema, error) {
	c := NewCompiler()
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile(url)
}
