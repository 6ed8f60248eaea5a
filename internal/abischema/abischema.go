// Package abischema compiles the ABI's embedded JSON Schemas once and
// validates messages against them.
package abischema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
	"github.com/gatehost/gatehost/internal/schemac"
	"github.com/gatehost/gatehost/internal/schemafind"
)

var (
	once     sync.Once
	compiled map[string]*jsonschema.Schema
	initErr  error
)

func load() {
	c := schemac.NewCompiler()
	names := []string{abi.SchemaRequest, abi.SchemaResponse, abi.SchemaDescriptor, abi.SchemaProposal, abi.SchemaToolCall, abi.SchemaMerge, abi.SchemaCounters}
	for _, n := range names {
		b, err := fs.ReadFile(abi.Schemas, n)
		if err != nil {
			initErr = err
			return
		}
		if err := c.AddResource(n, bytes.NewReader(b)); err != nil {
			initErr = fmt.Errorf("abischema: %s: %w", n, err)
			return
		}
	}
	compiled = make(map[string]*jsonschema.Schema, len(names))
	for _, n := range names {
		s, err := c.Compile(n)
		if err != nil {
			initErr = fmt.Errorf("abischema: compile %s: %w", n, err)
			return
		}
		compiled[n] = s
	}
}

// Validate checks the JSON document doc against the named schema (one of the
// abi.Schema* names).
func Validate(name string, doc []byte) error {
	once.Do(load)
	if initErr != nil {
		return initErr
	}
	s, ok := compiled[name]
	if !ok {
		return fmt.Errorf("abischema: unknown schema %q", name)
	}
	v, err := Decode(doc)
	if err != nil {
		return err
	}
	return SafeValidate(s, v)
}

// ValidateValue checks v, a document already decoded by Decode, against the
// named schema: for callers that need the decoded value anyway.
func ValidateValue(name string, v any) error {
	once.Do(load)
	if initErr != nil {
		return initErr
	}
	s, ok := compiled[name]
	if !ok {
		return fmt.Errorf("abischema: unknown schema %q", name)
	}
	return SafeValidate(s, v)
}

// SafeValidate runs s.Validate(v) and turns a panic of the validator into an
// error: the documents it checks come from agents and gates, and no input may
// take the host down. A document that does not match is a
// *schemafind.ValidationError, a failure of the validator an error wrapping
// schemafind.ErrValidator.
func SafeValidate(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schema validator failed: %v", p)
		}
	}()
	if err = s.Validate(v); err == nil {
		return nil
	}
	return schemafind.Explain(s.Location, v, err)
}

// Decode decodes JSON the way the validator expects: numbers as json.Number,
// one value, nothing after it. It decodes as a json.Decoder with UseNumber
// would, without reflection (guestjson.DecodeValue, fuzzed against
// encoding/json): the host decodes every subject and every answer with it.
func Decode(doc []byte) (any, error) {
	v, err := guestjson.DecodeValue(doc)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := checkNumbers(v, ""); err != nil {
		return nil, err
	}
	return v, nil
}

// maxNumberLen caps a number literal's length. The validator turns numbers
// into big rationals: a literal like 1e9999999 costs it seconds or makes it
// panic (the validator dereferences a nil *big.Rat), so
// numbers are bounded here, before any schema sees them.
const maxNumberLen = 64

// CheckNumbers refuses a decoded document (numbers as json.Number) holding a
// number literal that is too long or outside the range of an IEEE-754
// double. Call it before validating such a document against any schema.
func CheckNumbers(v any) error { return checkNumbers(v, "") }

func checkNumbers(v any, path string) error {
	n, where, tooLong := badNumber(v, nil)
	if n == "" {
		return nil
	}
	// The path is built only now: on the way, it cost an allocation per
	// value of every subject and answer.
	var b strings.Builder
	b.WriteString(path)
	for i := len(where) - 1; i >= 0; i-- {
		b.WriteString("/" + where[i])
	}
	if tooLong {
		return fmt.Errorf("number at %q has %d characters, more than %d", b.String(), len(n), maxNumberLen)
	}
	return fmt.Errorf("number %s at %q is out of range", n, b.String())
}

// badNumber returns the first number in v that is too long or out of
// range, and its path below v, innermost segment first (appended to where),
// or "" when there is none.
func badNumber(v any, where []string) (n json.Number, _ []string, tooLong bool) {
	switch t := v.(type) {
	case json.Number:
		if len(t) > maxNumberLen {
			return t, where, true
		}
		if _, err := strconv.ParseFloat(string(t), 64); err != nil {
			return t, where, false
		}
	case map[string]any:
		for k, c := range t {
			if n, where, tooLong := badNumber(c, where); n != "" {
				return n, append(where, k), tooLong
			}
		}
	case []any:
		for i, c := range t {
			if n, where, tooLong := badNumber(c, where); n != "" {
				return n, append(where, strconv.Itoa(i)), tooLong
			}
		}
	}
	return "", where, false
}

// CompileConfigSchema compiles a gate's config schema (draft 2020-12 unless
// the schema's $schema says otherwise). References to remote documents are
// refused: a gate's schema must be self-contained.
func CompileConfigSchema(schema []byte) (*jsonschema.Schema, error) {
	return schemac.Compile("config.schema.json", schema)
}
