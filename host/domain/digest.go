package domain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// answerDigestDomain starts the bytes AnswerDigest is taken over, so that
// no other SHA-256 the host computes can name a catalog's answers.
const answerDigestDomain = "gatehost domain answers v1\x00"

// AnswerDigest is the SHA-256 of everything query.capability answers from
// c (abi/SPEC.md §7.12): for every name a capability answers to (its own
// name and its tools), in byte order, the name, the capability's JSON as
// the host sends it, and the vars it reads that are not bound. Two
// catalogs with the same digest give every query.capability request the
// same answer, so the host can name its catalogs' content to gates
// (context.query_digest, minor 11) and a gate may keep answers by it.
// Binding a var changes it; views and data do not enter it, since
// query.rows answers are never kept. The error is a capability that does
// not encode, which a loaded catalog never has.
func (c *Catalog) AnswerDigest() ([32]byte, error) {
	b := []byte(answerDigestDomain)
	b = binary.AppendUvarint(b, uint64(len(c.tools)))
	for _, name := range slices.Sorted(maps.Keys(c.tools)) {
		raw, err := json.Marshal(c.caps[c.tools[name]])
		if err != nil {
			return [32]byte{}, fmt.Errorf("domain %s: capability %s: %w", c.Name, c.tools[name], err)
		}
		b = appendField(b, name)
		b = appendField(b, string(raw))
		unbound := c.Unbound(name)
		b = binary.AppendUvarint(b, uint64(len(unbound)))
		for _, v := range unbound {
			b = appendField(b, v)
		}
	}
	return sha256.Sum256(b), nil
}

// appendField appends s with its length first, so that no two sequences of
// fields encode alike.
func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
