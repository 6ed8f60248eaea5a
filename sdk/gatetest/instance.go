package gatetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

// Instance runs a gate natively the way the host runs one module instance
// of it (abi/SPEC.md §5.3): every request with a config carries
// config_digest, and the config itself only until this Instance has sent
// it once, since every SDK gate declares config_cache. Benchmarks that set
// a gate's native code against its wasm build use it, so that both sides
// move the same bytes per run; Evaluate, which sends the config every
// time, is for tests.
//
// Natively, every Instance in a process shares the SDK's one set of held
// configs, so configs other instances send can push this one's out; where
// the host would answer that run inconclusive (config_not_held), Instance
// sends the config again at once. The zero value is not usable; an
// Instance is not safe for concurrent use.
type Instance struct {
	gate sdk.Gate
	host sdk.Host
	// evaluate is Evaluate; the tests see what is sent through it.
	evaluate func(context.Context, sdk.Gate, abi.Request, sdk.Host) (abi.Response, error)

	sent []string // digests sent in full, oldest first, at most abi.ConfigCacheSize
	// lastRaw is the config of the last request as given, wire and digest
	// what it is sent as: compacting and hashing it again each run would
	// be work the host does once, at load.
	lastRaw, lastWire []byte
	lastDigest        string
}

// NewInstance returns an Instance of g whose capability operations h
// answers.
func NewInstance(g sdk.Gate, h sdk.Host) *Instance {
	return &Instance{gate: g, host: h, evaluate: Evaluate}
}

// Evaluate runs the gate on req as Evaluate does, with req's config sent
// in full only the first time (req.ConfigDigest is set here; a value given
// is replaced). The error is Evaluate's, or the config not being JSON.
func (i *Instance) Evaluate(ctx context.Context, req abi.Request) (abi.Response, error) {
	if len(req.Config) == 0 {
		req.ConfigDigest = ""
		return i.evaluate(ctx, i.gate, req, i.host)
	}
	if !bytes.Equal(req.Config, i.lastRaw) {
		// The bytes Evaluate's json.Marshal sends, as the host's: compacted,
		// with <, >, & and U+2028/U+2029 escaped.
		wire, err := json.Marshal(req.Config)
		if err != nil {
			return abi.Response{}, fmt.Errorf("gatetest: config: %w", err)
		}
		sum := sha256.Sum256(wire)
		i.lastRaw, i.lastWire = bytes.Clone(req.Config), wire
		i.lastDigest = abi.ConfigDigestPrefix + hex.EncodeToString(sum[:])
	}
	req.ConfigDigest = i.lastDigest
	if slices.Contains(i.sent, i.lastDigest) {
		req.Config = nil
		resp, err := i.evaluate(ctx, i.gate, req, i.host)
		if err != nil || resp.Verdict != abi.Inconclusive || resp.Reason != abi.ReasonConfigNotHeld {
			return resp, err
		}
		i.sent = nil
	}
	req.Config = i.lastWire
	resp, err := i.evaluate(ctx, i.gate, req, i.host)
	if err == nil && !(resp.Verdict == abi.Inconclusive && resp.Reason == abi.ReasonConfigNotHeld) {
		if len(i.sent) == abi.ConfigCacheSize {
			i.sent = slices.Delete(i.sent, 0, 1)
		}
		i.sent = append(i.sent, i.lastDigest)
	}
	return resp, err
}
