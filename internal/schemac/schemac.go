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

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ErrRemoteRef is the error of a $ref to a document that was not added to
// the compiler: schemas must be self-contained, since fetching one would
// give a gate a network and make a verdict depend on it.
var ErrRemoteRef = errors.New("remote reference not allowed")

// NewCompiler returns a compiler with the project's settings: draft 2020-12
// unless a schema's $schema names another (MCP tools' schemas rarely name
// one), format assertions on (a schema's every keyword is checked,
// "format" included), and no loader: a reference outside the added
// resources fails with ErrRemoteRef.
func NewCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%w: %q", ErrRemoteRef, u)
	}
	return c
}

// Compile compiles the one self-contained schema document raw, addressed as
// url (which anchors relative references and names it in errors), with
// NewCompiler's settings. Errors are the validator's: a
// *jsonschema.SchemaError for a schema that is not valid, wrapping
// ErrRemoteRef for a remote reference.
func Compile(url string, raw []byte) (*jsonschema.Schema, error) {
	c := NewCompiler()
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile(url)
}
