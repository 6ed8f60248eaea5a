// Package schemafind answers schema.validate (abi/SPEC.md §7.13): it
// validates a JSON value against a tool's input schema and turns the
// validator's error tree into the findings gates report (keyword, RFC 6901
// pointer, a message that never echoes the value), in a fixed order. It is
// the one implementation of those rules: the host's schema capability and
// the native test host of sdk/gatetest both answer through it, and no gate
// compiles schemas itself.
package schemafind

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/schemac"
)

var (
	// ErrBadValue: the request's value is not one JSON value. A host
	// answers bad_request.
	ErrBadValue = errors.New("value is not one JSON value")
	// ErrCompile: the schema does not compile. A host answers
	// unavailable: nothing is known about the value, so a gate must not
	// accept it.
	ErrCompile = errors.New("input schema does not compile")
	// ErrValidator: the validator failed on the value (not a violation:
	// say, a $ref cycle it could not follow). A host answers unavailable.
	ErrValidator = errors.New("validator failed")
)

// DefaultCacheSize bounds a Cache made by NewCache(0): more distinct
// schemas than a large catalog holds, so a steady catalog compiles each
// schema once, while a catalog that churns cannot grow memory without bound.
const DefaultCacheSize = 1024

// Cache holds compiled schemas by key, least recently used evicted first.
// It is safe for concurrent use, and a schema compiles once per key even
// when many callers ask for it at the same time.
type Cache struct {
	max      int
	mu       sync.Mutex
	lru      *list.List // of *entry, most recent first
	m        map[string]*list.Element
	compiles atomic.Int64
}

type entry struct {
	key  string
	once sync.Once
	s    *jsonschema.Schema
	err  error
}

// NewCache returns a cache of at most max compiled schemas
// (DefaultCacheSize when max <= 0).
func NewCache(max int) *Cache {
	if max <= 0 {
		max = DefaultCacheSize
	}
	return &Cache{max: max, lru: list.New(), m: map[string]*list.Element{}}
}

// Compiles returns how many schemas the cache has compiled (misses).
func (c *Cache) Compiles() int64 { return c.compiles.Load() }

// Len returns the number of schemas held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// schema returns the compiled schema for key, compiling raw() on a miss.
// raw is called only on a miss, so a caller can leave copying the schema
// out of its catalog to then. A compile error is cached like a schema: the
// same bytes fail the same way.
func (c *Cache) schema(key string, raw func() []byte) (*jsonschema.Schema, error) {
	c.mu.Lock()
	var e *entry
	if el, ok := c.m[key]; ok {
		c.lru.MoveToFront(el)
		e = el.Value.(*entry)
	} else {
		e = &entry{key: key}
		c.m[key] = c.lru.PushFront(e)
		for c.lru.Len() > c.max {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.m, old.Value.(*entry).key)
		}
	}
	c.mu.Unlock()
	e.once.Do(func() {
		c.compiles.Add(1)
		e.s, e.err = compile(raw())
	})
	return e.s, e.err
}

// compile compiles one self-contained schema with the project's settings
// (schemac). The compiler panics on some malformed schemas; that is a
// reason like any other.
func compile(raw []byte) (s *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w: %v", ErrCompile, r)
		}
	}()
	// Each compile has its own compiler, so one fixed base URL will do; it
	// only anchors relative references, which the compiler then refuses.
	s, err = schemac.Compile("https://schemas.gatehost.invalid/tool.json", raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompile, CompileError(err))
	}
	return s, nil
}

// CompileError returns err, an error of schemac, in one line: a schema
// that is not valid against its metaschema as a *ValidationError of the
// metaschema (Explain), any other error as it is.
func CompileError(err error) error {
	var se *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &se) && errors.As(se.Err, &ve) {
		return Explain(ve.SchemaURL, nil, ve)
	}
	return err
}

// Schema names the schema a request resolved to.
type Schema struct {
	// Key identifies the schema in the cache (see Key).
	Key string
	// Digest is the schema digest the answer reports.
	Digest string
	// Raw returns the schema's bytes. It is called only on a cache miss,
	// so that a caller can leave copying them out of its catalog to then.
	// Nil means the tool registers no input schema: every value is valid.
	Raw func() []byte
}

// FromTool returns the Schema of a tool record held in memory. A record
// whose input_schema is absent or JSON null registers none.
func FromTool(t *abi.Tool) Schema {
	s := Schema{Digest: t.SchemaDigest}
	raw := bytes.TrimSpace(t.InputSchema)
	if len(raw) == 0 || string(raw) == "null" {
		return s
	}
	s.Key, s.Raw = Key(t.SchemaDigest, raw), func() []byte { return raw }
	return s
}

// Key returns the cache key of a schema: its digest when that has the form
// of one, else the schema bytes themselves, so that a missing or malformed
// digest can never make two different schemas share an entry.
func Key(digest string, raw []byte) string {
	if abi.IsSchemaDigest(digest) {
		return digest
	}
	return "raw:" + string(raw)
}

// Validate answers schema.validate for value against s. Numbers no tool can
// receive are reported first, and then the value is not validated further
// (see numbers.go); otherwise the findings are those of Violations, sorted
// by pointer, keyword and message, compacted, and cut at
// abi.MaxSchemaFindings or where their pointers pass
// abi.MaxSchemaPointerBytes. Errors wrap ErrBadValue, ErrCompile or
// ErrValidator; none is an answer a gate may accept on.
func (c *Cache) Validate(s Schema, value json.RawMessage) (abi.SchemaValidateAnswer, error) {
	a := abi.SchemaValidateAnswer{Found: true, SchemaDigest: s.Digest}
	v, err := decodeValue(value)
	if err != nil {
		return abi.SchemaValidateAnswer{}, err
	}
	a.Findings, a.Truncated = numberFindings(v)
	if len(a.Findings) == 0 && s.Raw != nil {
		compiled, err := c.schema(s.Key, s.Raw)
		if err != nil {
			return abi.SchemaValidateAnswer{}, err
		}
		if a.Findings, err = validate(compiled, v); err != nil {
			return abi.SchemaValidateAnswer{}, err
		}
	}
	if n := answerCut(a.Findings); n < len(a.Findings) {
		a.Findings, a.Truncated = a.Findings[:n], true
	}
	a.Valid = len(a.Findings) == 0
	return a, nil
}

// answerCut is how many of fs one answer holds: at most
// abi.MaxSchemaFindings, and none after their pointers together pass
// abi.MaxSchemaPointerBytes (the first is always held).
func answerCut(fs []abi.SchemaFinding) int {
	bytes := 0
	for i, f := range fs {
		if i == abi.MaxSchemaFindings || (i > 0 && bytes > abi.MaxSchemaPointerBytes) {
			return i
		}
		bytes += len(f.Pointer)
	}
	return len(fs)
}

// decodeValue decodes a value the way the validator wants it: numbers as
// json.Number, so that integer checks and big values are exact.
func decodeValue(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadValue, err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the value", ErrBadValue)
	}
	return v, nil
}
