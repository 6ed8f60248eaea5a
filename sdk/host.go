package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
)

// Level is a log level with log/slog's values.
type Level int32

const (
	LevelDebug Level = -4
	LevelInfo  Level = 0
	LevelWarn  Level = 4
	LevelError Level = 8
)

// Host is the host as a gate sees it. In a module it is backed by the
// gatehost_v1 host functions; in tests by sdk/gatetest.
type Host interface {
	// Call invokes a capability operation with a JSON request and returns
	// the operation's JSON result. A typed refusal, such as an ungranted
	// capability, is returned as a *abi.CallError.
	Call(op string, request []byte) ([]byte, error)
	// Log writes msg to the host's log.
	Log(level Level, msg string)
}

// ErrCapabilityDenied matches (errors.Is) a *abi.CallError whose code is
// capability_denied.
var ErrCapabilityDenied = errors.New("capability denied")

type callError struct{ *abi.CallError }

func (e callError) Unwrap() error { return e.CallError }

func (e callError) Is(target error) bool {
	return target == ErrCapabilityDenied && e.Code == abi.ErrCodeCapabilityDenied
}

// DecodeAnswer unwraps the envelope of a call answer ({"result"} or
// {"error"}). Host implementations use it; gates use Call.
func DecodeAnswer(answer []byte) ([]byte, error) {
	var env abi.CallAnswer
	if err := decode(answer, &env); err != nil {
		return nil, fmt.Errorf("sdk: decode host answer: %w", err)
	}
	if env.Error != nil {
		return nil, callError{env.Error}
	}
	if env.Result == nil {
		return nil, errNoResult
	}
	return env.Result, nil
}

// EnvelopeCaller is implemented by a Host that can return a call's whole
// answer envelope ({"result"} or {"error"}) undecoded. Call then decodes
// envelope and result in one pass instead of two; the guest's Host does.
type EnvelopeCaller interface {
	// CallEnvelope invokes op and returns the answer envelope. Its error
	// is a transport failure (abi.Status*), never a *abi.CallError.
	CallEnvelope(op string, request []byte) ([]byte, error)
}

// Call invokes op with req encoded as JSON and decodes the result into T.
// A refusal is returned as a *abi.CallError (errors.As), wrapped. The
// answers gates decode on every run (abi.CatalogGetAnswer,
// abi.SessionGetAnswer, abi.SchemaValidateAnswer, abi.QueryCapabilityAnswer,
// abi.QueryRowsAnswer) are decoded without reflection, to the same values
// as encoding/json; an answer that does not decode is an error whose text
// names the member and the byte offset.
func Call[T any](h Host, op string, req any) (T, error) {
	var zero T
	body, err := encodeRequest(req)
	if err != nil {
		return zero, fmt.Errorf("sdk: encode %s request: %w", op, err)
	}
	if ec, ok := h.(EnvelopeCaller); ok {
		raw, err := ec.CallEnvelope(op, body)
		if err != nil {
			return zero, fmt.Errorf("sdk: %s: %w", op, err)
		}
		var env guestjson.Envelope[T]
		handled, err := guestjson.DecodeEnvelope(raw, &env)
		if !handled {
			err = json.Unmarshal(raw, &env)
		}
		if err != nil {
			return zero, fmt.Errorf("sdk: decode %s answer: %w", op, err)
		}
		switch {
		case env.Error != nil:
			return zero, fmt.Errorf("sdk: %s: %w", op, callError{env.Error})
		case env.Result == nil:
			return zero, fmt.Errorf("sdk: %s: %w", op, errNoResult)
		}
		return *env.Result, nil
	}
	raw, err := h.Call(op, body)
	if err != nil {
		return zero, fmt.Errorf("sdk: %s: %w", op, err)
	}
	var out T
	if err := decode(raw, &out); err != nil {
		return zero, fmt.Errorf("sdk: decode %s result: %w", op, err)
	}
	return out, nil
}

// encodeRequest encodes a host-call request: the requests gates send on
// every run without reflection (guestjson.EncodeHostRequest), the rest
// with json.Marshal.
func encodeRequest(req any) ([]byte, error) { return guestjson.EncodeHostRequest(req) }

// decode decodes b into *v as json.Unmarshal does: with guestjson for the
// answers gates decode on every run (encoding/json's reflection costs
// milliseconds per answer in a guest), with encoding/json for the rest.
func decode[T any](b []byte, v *T) error {
	if handled, err := guestjson.Decode(b, v); handled {
		return err
	}
	return json.Unmarshal(b, v)
}

var errNoResult = errors.New("sdk: host answer has neither result nor error")

// CatalogGet looks a tool up by id, wire name or alias in the run's pinned
// catalog snapshot. found is false when no tool has that name.
//
// The tool comes with its input schema. The SDK remembers the schema of
// each tool it has looked up (a pooled instance serves many runs) and asks
// the host to leave it out when its digest is still the one remembered
// (known_schema_digest, abi/SPEC.md §7.7), so a warm instance does not
// decode every schema on every run.
//
// In a module, the SDK also remembers the answers themselves, keyed by the
// run's catalog generation (context.catalog_generation) and the name: a
// generation names one immutable catalog snapshot for as long as the host
// runs (abi/SPEC.md §7.7), and an instance serves one host, so a warm
// instance asks the host only for names it has not looked up in this
// generation. Errors are never remembered.
func CatalogGet(h Host, name string) (tool abi.Tool, found bool, err error) {
	var pins runPins
	if pr, ok := h.(pinnedRun); ok {
		pins = pr.pins()
	}
	if pins.catalog {
		if t, found, ok := tools.get(pins.generation, name); ok {
			return t, found, nil
		}
	}
	tool, found, err = catalogGet(h, name)
	if pins.catalog && err == nil {
		tools.put(pins.generation, name, tool, found)
	}
	return tool, found, err
}

func catalogGet(h Host, name string) (tool abi.Tool, found bool, err error) {
	req := abi.CatalogGetRequest{Name: name}
	known, haveKnown := schemas.get(name)
	if haveKnown {
		req.KnownSchemaDigest = known.digest
	}
	a, err := Call[abi.CatalogGetAnswer](h, abi.OpCatalogGet, req)
	if err != nil || !a.Found || a.Tool == nil {
		return abi.Tool{}, false, err
	}
	if a.SchemaOmitted {
		if !haveKnown || a.Tool.SchemaDigest != known.digest {
			// The host left out a schema we do not hold: ask again
			// for the whole record rather than guess.
			a, err = Call[abi.CatalogGetAnswer](h, abi.OpCatalogGet, abi.CatalogGetRequest{Name: name})
			if err != nil || !a.Found || a.Tool == nil {
				return abi.Tool{}, false, err
			}
			if a.SchemaOmitted {
				return abi.Tool{}, false, fmt.Errorf("sdk: %s: schema of %q omitted though not known", abi.OpCatalogGet, name)
			}
		} else {
			a.Tool.InputSchema = known.schema
		}
	}
	// Only well-formed digests are remembered: a malformed one could make
	// two different schemas look the same.
	if !a.SchemaOmitted && abi.IsSchemaDigest(a.Tool.SchemaDigest) {
		schemas.put(name, knownSchema{digest: a.Tool.SchemaDigest, schema: a.Tool.InputSchema})
	}
	return *a.Tool, true, nil
}

// CatalogList lists the tools of the run's pinned catalog snapshot.
func CatalogList(h Host) (abi.CatalogListAnswer, error) {
	return Call[abi.CatalogListAnswer](h, abi.OpCatalogList, struct{}{})
}

// ValidateSchema validates req.Value against an input schema of the run's
// pinned catalog snapshot, named by tool or by schema digest (schema.validate,
// abi/SPEC.md §7.13). The host compiles the schema; the gate needs the
// schema capability granted. A refusal (capability_denied, bad_request, or
// unavailable for a schema that does not compile) is an error, as is an
// answer that contradicts itself (valid with findings, or invalid without):
// a gate must not accept what it could not validate.
func ValidateSchema(h Host, req abi.SchemaValidateRequest) (abi.SchemaValidateAnswer, error) {
	a, err := Call[abi.SchemaValidateAnswer](h, abi.OpSchemaValidate, req)
	if err != nil {
		return abi.SchemaValidateAnswer{}, err
	}
	if err := checkSchemaAnswer(abi.OpSchemaValidate, &a); err != nil {
		return abi.SchemaValidateAnswer{}, err
	}
	return a, nil
}

// checkSchemaAnswer refuses an answer that contradicts itself (abi/SPEC.md
// §7.13): a value not found that is valid or has findings, a found value
// valid with findings or invalid without, or truncated findings of a valid
// value; where names it in the error.
func checkSchemaAnswer(where string, a *abi.SchemaValidateAnswer) error {
	switch {
	case !a.Found && (a.Valid || len(a.Findings) > 0 || a.Truncated):
		return fmt.Errorf("sdk: %s: answer is found=false with valid=%t, %d findings, truncated=%t", where, a.Valid, len(a.Findings), a.Truncated)
	case a.Found && a.Valid == (len(a.Findings) > 0), a.Valid && a.Truncated:
		return fmt.Errorf("sdk: %s: answer is valid=%t with %d findings, truncated=%t", where, a.Valid, len(a.Findings), a.Truncated)
	}
	return nil
}

// ValidateSchemas validates each of reqs as ValidateSchema does and returns
// the answers in reqs' order, crossing into the host as few times as it
// can: consecutive requests go to schema.validate_many (abi/SPEC.md §7.13,
// minor 12) in batches of at most abi.MaxSchemaItems whose encoding stays
// under abi.MaxHostRequestBytes (a request too large for that is sent on
// its own, as ValidateSchema sends it). A host without schema.validate_many
// (unknown_operation: a host before minor 12) is asked request by request.
// Any refusal, an answer with another number of items, or an item that
// contradicts itself fails the whole call: a gate must not accept what it
// could not validate.
func ValidateSchemas(h Host, reqs []abi.SchemaValidateRequest) ([]abi.SchemaValidateAnswer, error) {
	out := make([]abi.SchemaValidateAnswer, 0, len(reqs))
	for len(reqs) > 0 {
		n := schemaBatch(reqs)
		batch := reqs[:n]
		reqs = reqs[n:]
		if n > 1 {
			a, err := Call[abi.SchemaValidateManyAnswer](h, abi.OpSchemaValidateMany, abi.SchemaValidateManyRequest{Items: batch})
			var ce *abi.CallError
			switch {
			case err == nil:
				if len(a.Items) != n {
					return nil, fmt.Errorf("sdk: %s: answered %d items of %d", abi.OpSchemaValidateMany, len(a.Items), n)
				}
				for i := range a.Items {
					if err := checkSchemaAnswer(fmt.Sprintf("%s: items[%d]", abi.OpSchemaValidateMany, i), &a.Items[i]); err != nil {
						return nil, err
					}
				}
				out = append(out, a.Items...)
				continue
			case !errors.As(err, &ce) || ce.Code != abi.ErrCodeUnknownOperation:
				return nil, err
			}
		}
		for i := range batch {
			a, err := ValidateSchema(h, batch[i])
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// schemaBatch is how many of reqs (at least one) one schema.validate_many
// request carries: at most abi.MaxSchemaItems, and no more than fit under
// abi.MaxHostRequestBytes when every character of a name is escaped.
func schemaBatch(reqs []abi.SchemaValidateRequest) int {
	size := len(`{"items":[]}`)
	n := 0
	for n < len(reqs) && n < abi.MaxSchemaItems {
		r := &reqs[n]
		s := len(r.Value) + 6*(len(r.Tool)+len(r.SchemaDigest)) + len(`{"tool":"","schema_digest":"","value":null},`)
		if n > 0 && size+s > abi.MaxHostRequestBytes {
			break
		}
		size += s
		n++
	}
	return max(n, 1)
}

// toolCacheMax bounds the remembered answers of one generation.
const toolCacheMax = 1024

// tools remembers catalog.get answers of one catalog generation by the name
// looked up; a run of another generation empties it. The mutex is for
// native use; in a guest there is one thread.
var tools toolCache

type toolCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]cachedTool
}

type cachedTool struct {
	tool  abi.Tool
	found bool
}

// get returns a copy of the remembered answer, so that a gate changing its
// tool's aliases or hints changes nothing the next run sees.
func (c *toolCache) get(gen uint64, name string) (abi.Tool, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[name]
	if !ok || c.gen != gen {
		return abi.Tool{}, false, false
	}
	return copyTool(e.tool), e.found, true
}

func (c *toolCache) put(gen uint64, name string, t abi.Tool, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.gen != gen || len(c.m) >= toolCacheMax {
		c.m, c.gen = map[string]cachedTool{}, gen
	}
	c.m[name] = cachedTool{tool: copyTool(t), found: found}
}

// copyTool copies what a gate could change in place; the input schema is
// shared, as the schema cache below shares it.
func copyTool(t abi.Tool) abi.Tool {
	t.Aliases = slices.Clone(t.Aliases)
	if t.Hints != nil {
		h := *t.Hints
		t.Hints = &h
	}
	return t
}

// schemaCacheMax bounds the remembered schemas: a catalog that churns
// cannot grow a long-lived instance's memory without bound.
const schemaCacheMax = 1024

type knownSchema struct {
	digest string
	schema json.RawMessage
}

// schemas remembers tools' input schemas by the name they were looked up
// under. The mutex is for native use; in a guest there is one thread.
var schemas = schemaCache{m: map[string]knownSchema{}}

type schemaCache struct {
	mu sync.Mutex
	m  map[string]knownSchema
}

func (c *schemaCache) get(name string) (knownSchema, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[name]
	return k, ok
}

func (c *schemaCache) put(name string, k knownSchema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[name]; !ok && len(c.m) >= schemaCacheMax {
		for n := range c.m { // evict one; which does not matter
			delete(c.m, n)
			break
		}
	}
	c.m[name] = k
}
