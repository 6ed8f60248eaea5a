package sdk

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/abi"
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
	if err := json.Unmarshal(answer, &env); err != nil {
		return nil, fmt.Errorf("sdk: decode host answer: %w", err)
	}
	if env.Error != nil {
		return nil, callError{env.Error}
	}
	if env.Result == nil {
		return nil, errors.New("sdk: host answer has neither result nor error")
	}
	return env.Result, nil
}

// Call invokes op with req encoded as JSON and decodes the result into T.
func Call[T any](h Host, op string, req any) (T, error) {
	var zero T
	body, err := json.Marshal(req)
	if err != nil {
		return zero, fmt.Errorf("sdk: encode %s request: %w", op, err)
	}
	raw, err := h.Call(op, body)
	if err != nil {
		return zero, fmt.Errorf("sdk: %s: %w", op, err)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return zero, fmt.Errorf("sdk: decode %s result: %w", op, err)
	}
	return out, nil
}

// CatalogGet looks a tool up by id, wire name or alias in the run's pinned
// catalog snapshot. found is false when no tool has that name.
func CatalogGet(h Host, name string) (tool abi.Tool, found bool, err error) {
	a, err := Call[abi.CatalogGetAnswer](h, abi.OpCatalogGet, abi.CatalogGetRequest{Name: name})
	if err != nil || !a.Found || a.Tool == nil {
		return abi.Tool{}, false, err
	}
	return *a.Tool, true, nil
}

// CatalogList lists the tools of the run's pinned catalog snapshot.
func CatalogList(h Host) (abi.CatalogListAnswer, error) {
	return Call[abi.CatalogListAnswer](h, abi.OpCatalogList, struct{}{})
}
