package sdk

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// fixedHost answers every call with one envelope; as an EnvelopeCaller
// when envelope is set, else only through Call (DecodeAnswer).
type fixedHost struct{ answer string }

func (h fixedHost) Log(Level, string) {}

func (h fixedHost) Call(string, []byte) ([]byte, error) { return DecodeAnswer([]byte(h.answer)) }

type fixedEnvelopeHost struct{ fixedHost }

func (h fixedEnvelopeHost) CallEnvelope(string, []byte) ([]byte, error) {
	return []byte(h.answer), nil
}

// wantCall is what Call[T] returned when it decoded with encoding/json
// alone: through the envelope in one pass, or the envelope then the
// result.
func wantCall[T any](answer string, onePass bool) (T, error) {
	var zero T
	var env struct {
		Result *T             `json:"result"`
		Error  *abi.CallError `json:"error"`
	}
	var result json.RawMessage // in two passes: the result, still to decode
	var err error
	if onePass {
		err = json.Unmarshal([]byte(answer), &env)
	} else {
		var ca abi.CallAnswer
		err = json.Unmarshal([]byte(answer), &ca)
		env.Error, result = ca.Error, ca.Result
		if result != nil {
			env.Result = new(T)
		}
	}
	switch {
	case err != nil:
		return zero, err
	case env.Error != nil:
		return zero, env.Error
	case env.Result == nil:
		return zero, errNoResult
	}
	if result != nil {
		if err := json.Unmarshal(result, env.Result); err != nil {
			return zero, err
		}
	}
	return *env.Result, nil
}

// callAgrees checks Call[T] against wantCall on answer, for both kinds of
// host: the same value, or both an error; a refusal by the host stays a
// *abi.CallError, no result stays errNoResult.
func callAgrees[T any](t *testing.T, answer string) {
	t.Helper()
	for _, h := range []Host{fixedHost{answer}, fixedEnvelopeHost{fixedHost{answer}}} {
		_, onePass := h.(EnvelopeCaller)
		want, wantErr := wantCall[T](answer, onePass)
		got, gotErr := Call[T](h, "op.x", struct{}{})
		if wantErr == nil {
			require.NoError(t, gotErr, "%T %s (one pass %t)", want, answer, onePass)
			require.Equal(t, want, got, "%T %s (one pass %t)", want, answer, onePass)
			continue
		}
		require.Error(t, gotErr, "%T %s (one pass %t)", want, answer, onePass)
		assert.Contains(t, gotErr.Error(), "op.x")
		var wantCE, gotCE *abi.CallError
		if errors.As(wantErr, &wantCE) {
			require.ErrorAs(t, gotErr, &gotCE)
			assert.Equal(t, wantCE, gotCE)
		}
		assert.Equal(t, errors.Is(wantErr, errNoResult), errors.Is(gotErr, errNoResult))
	}
}

// TestCallDecodesAnswersAsEncodingJSON: the answers Call decodes without
// encoding/json come out as encoding/json decoded them, refusals and
// missing results included, whether the host hands over the envelope or
// only the result.
func TestCallDecodesAnswersAsEncodingJSON(t *testing.T) {
	answers := []string{
		`{"result":{"found":true,"tool":{"id":"x:t","name":"t","aliases":["a"],"input_schema":{"type":"object"},"schema_digest":"d","hints":{"read_only":true}}}}`,
		`{"Result":{"FOUND":true,"Tool":{"ID":"x:t"}},"result":{"tool":{"name":"n"}}}`,
		`{"result":{"session":"s","known":true,"version":2,"core":{"schema_digest":"a","provenance":"p"}}}`,
		`{"result":{"found":true,"valid":false,"findings":[{"pointer":"/a","keyword":"type","message":"m"}]}}`,
		`{"result":{"rows":[{"id":"o1","total":12.5,"n":null,"items":[1,"x"]}]}}`,
		`{"result":{"found":true,"capability":{"name":"c","kind":"action","preconditions":[{"id":"p","bind":{"o":{"kind":"param","name":"o"}},"deny_when":{"field":"s","not_equals":"pending"}}]}}}`,
		`{"error":{"code":"capability_denied","message":"not granted"}}`,
		`{"result":{"found":true},"error":{"code":"unavailable","message":"m"}}`,
		`{"result":null}`, `{}`, `null`, `{"result":{"found":true},"result":null}`,
		`{"result":{"found":"yes"}}`, `{"result":{"version":-1,"rows":{}}}`, `{"result":{}} {}`, `{"result":`, `[]`,
		`{"result":{"capability":{"preconditions":[{"bind":{"o":{"kind":"param","bogus":1}}}]}}}`,
	}
	for _, a := range answers {
		t.Run(a, func(t *testing.T) {
			callAgrees[abi.CatalogGetAnswer](t, a)
			callAgrees[abi.SessionGetAnswer](t, a)
			callAgrees[abi.SchemaValidateAnswer](t, a)
			callAgrees[abi.QueryRowsAnswer](t, a)
			callAgrees[abi.QueryCapabilityAnswer](t, a)
			// A type without its own decoder keeps encoding/json.
			callAgrees[abi.CatalogListAnswer](t, a)
		})
	}
}
