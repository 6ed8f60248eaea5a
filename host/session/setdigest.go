package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"

	"github.com/gatehost/gatehost/abi"
)

// setDigestDomain starts the bytes a set digest is taken over, so that no
// other SHA-256 the host computes can name a session set.
const setDigestDomain = "gatehost session set v1\x00"

// Digest names the set's content: "sha256:" and the SHA-256, in lowercase
// hex, of an encoding of every member of the set (its id, version, every
// core pin and every activation with its grant), tool ids in byte order,
// each string length-prefixed. Two sets have the same digest exactly when
// they hold the same content, however they were made or stored, so a gate
// may keep session.get answers by it (abi/SPEC.md §7.9, minor 10); a
// session deleted and made again with the same id and version but other
// tools has another digest. "" for a nil set.
//
// It is written out, not json.Marshal'd and hashed, because the host
// computes it on every run that reads a session: for a set of 117 tools
// it takes half of encoding/json's time (BenchmarkSetDigest).
func (s *Set) Digest() string {
	if s == nil {
		return ""
	}
	w := digestWriter{b: make([]byte, 0, 256*(1+len(s.Core)+len(s.Activated)))}
	w.b = append(w.b, setDigestDomain...)
	w.str(s.ID)
	w.uint(s.Version)
	w.uint(uint64(len(s.Core)))
	for _, tool := range slices.Sorted(maps.Keys(s.Core)) {
		p := s.Core[tool]
		w.str(tool)
		w.str(p.SchemaDigest)
		w.str(p.PolicyDigest)
		w.str(p.Provenance)
	}
	w.uint(uint64(len(s.Activated)))
	for _, tool := range slices.Sorted(maps.Keys(s.Activated)) {
		a := s.Activated[tool]
		w.str(tool)
		w.str(a.Grant.Session)
		w.str(a.Grant.Tool)
		w.uint(a.Grant.CatalogGeneration)
		w.str(a.Grant.CatalogDigest)
		w.str(a.Grant.SchemaDigest)
		w.str(a.Grant.PolicyDigest)
		w.str(a.Provenance)
	}
	sum := sha256.Sum256(w.b)
	return abi.SessionDigestPrefix + hex.EncodeToString(sum[:])
}

// digestWriter writes unsigned integers as 8 bytes and strings with their
// length first, so that no two sequences of members encode alike.
type digestWriter struct{ b []byte }

func (w *digestWriter) uint(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }

func (w *digestWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}
