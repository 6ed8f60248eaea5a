package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// policyVersion is the version of the policy document. It changes whenever
// the document gains or loses a field, so that no old digest can equal a
// new one by accident.
const policyVersion = 1

// policyDoc is what a policy digest covers: every field of a record that
// the exec gate, a session pin or an operator's policy decides on. The
// wire name, aliases, description and annotation title are left out: they
// are display text, and a call's name is checked against the record
// anyway.
type policyDoc struct {
	V            int    `json:"v"`
	ID           string `json:"id"`
	SchemaDigest string `json:"schema_digest"`
	Effect       Effect `json:"effect"`
	Hints        *Hints `json:"hints"` // null: the format has no hints
	Provenance   string `json:"provenance"`
	Source       string `json:"source"`
}

// PolicyDigestOf returns the policy digest of a normalised record: the
// lowercase hex SHA-256 of the canonical JSON (CanonicalJSON, abi/SPEC.md
// §8) of
//
//	{"v":1, "id":…, "schema_digest":…, "effect":…, "hints":{…}|null,
//	 "provenance":…, "source":…}
//
// with hints as in Hints' JSON form. It is the one place the digest is
// made; the store calls it for every record it publishes (Tool.PolicyDigest)
// and session grants pin its result (abi/SPEC.md §8.1).
//
// A string field that is not valid UTF-8 is an ErrInvalidTool error:
// encoding it would replace the bad bytes, and two different values would
// share a digest.
func PolicyDigestOf(t Tool) (string, error) {
	for _, f := range [...]struct{ name, v string }{
		{"id", t.ID}, {"schema_digest", t.SchemaDigest}, {"effect", string(t.Effect)},
		{"provenance", t.Provenance}, {"source", t.Source},
	} {
		if !utf8.ValidString(f.v) {
			return "", toolErr(t.ID, ErrInvalidTool, "%s is not valid UTF-8", f.name)
		}
	}
	doc := policyDoc{V: policyVersion, ID: t.ID, SchemaDigest: t.SchemaDigest, Effect: t.Effect,
		Hints: t.Hints, Provenance: t.Provenance, Source: t.Source}
	raw, err := json.Marshal(doc)
	if err != nil {
		return "", toolErr(t.ID, ErrInvalidTool, "policy document: %v", err)
	}
	c, err := CanonicalJSON(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
