package sdk

import (
	"fmt"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
)

// QueryCapability asks for the capability of domain that name names, by
// its own name or one of its tools (operation query.capability;
// abi/SPEC.md §7.12). The answer is decoded strictly, as the
// specification asks of a guest: a member the SDK does not know, such as
// an operator of a newer catalog, is an error, never dropped.
//
// In a module, the SDK remembers the answers of a run granted the query
// capability, keyed by the run's query digest (context.query_digest,
// minor 11), the domain and the name: the digest names the content of
// every catalog the host answers from, so a warm instance asks the host
// only for names it has not looked up under that digest. A run without a
// well-formed digest is always asked about; an answer whose bytes were
// decoded before is then not decoded again. Errors are never remembered.
//
// The capability returned is shared with every later run answered from
// memory: a gate must not modify it.
func QueryCapability(h Host, domain, name string) (abi.QueryCapabilityAnswer, error) {
	var digest string
	if pr, ok := h.(pinnedRun); ok {
		digest = pr.pins().query
	}
	key := domain + "\x00" + name
	if digest != "" {
		if a, ok := capabilities.get(digest, key); ok {
			return a, nil
		}
	}
	body, err := encodeRequest(abi.QueryCapabilityRequest{Domain: domain, Name: name})
	if err != nil {
		return abi.QueryCapabilityAnswer{}, fmt.Errorf("sdk: encode %s request: %w", abi.OpQueryCapability, err)
	}
	raw, err := h.Call(abi.OpQueryCapability, body)
	if err != nil {
		return abi.QueryCapabilityAnswer{}, fmt.Errorf("sdk: %s: %w", abi.OpQueryCapability, err)
	}
	a, ok := capabilityDecodes.getBytes("", raw)
	if !ok {
		if _, err := guestjson.DecodeStrict(raw, &a); err != nil {
			return abi.QueryCapabilityAnswer{}, fmt.Errorf("sdk: decode %s answer: %w", abi.OpQueryCapability, err)
		}
		capabilityDecodes.put("", string(raw), a)
	}
	if digest != "" {
		capabilities.put(digest, key, a)
	}
	return a, nil
}

// capabilities remembers query.capability answers of one query digest by
// domain and name; capabilityDecodes remembers the decode of an answer by
// its exact bytes, under no digest, for runs without one: the same bytes
// decode to the same value. Each holds a catalog's capabilities, not every
// name ever asked about (at most 256).
var capabilities, capabilityDecodes = newCapabilityCache(), newCapabilityCache()

func newCapabilityCache() *digestCache[abi.QueryCapabilityAnswer] {
	return &digestCache[abi.QueryCapabilityAnswer]{max: 256}
}
