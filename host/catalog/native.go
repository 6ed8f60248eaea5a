package catalog

import (
	"bytes"
	"encoding/json"

	"github.com/gatehost/gatehost/abi"
)

// snapshotVersion is the version of the snapshot digest document. It
// changes whenever the document gains or loses a field, so that no old
// digest can equal a new one by accident.
const snapshotVersion = 1

// A record of the native format (see Parse), and of the snapshot digest
// document, is the record's wire form, abi.Tool (Tool.ABI), whose JSON
// names the native format reads. The digest document leaves the input
// schema out: schema_digest covers it.

// snapshotDigest returns the digest of tools (normalised, sorted by id):
// the lowercase hex SHA-256 of the canonical JSON (CanonicalJSON) of
//
//	{"v":1, "tools":[{"id":…, "name":…, "aliases":[…]?, "description":…?,
//	  "schema_digest":…, "provenance":…, "source":…?, "effect":…,
//	  "hints":{…}?, "policy_digest":…}, …]}
//
// Every field of every record is covered; the input schema through its
// digest, so two schemas that differ only in key order or spacing do not
// make two catalogs. The generation is not: it is a local counter.
func snapshotDigest(tools []Tool) (string, error) {
	doc, err := snapshotDocument(tools)
	if err != nil {
		return "", err
	}
	return Digest(doc)
}

// snapshotDocument is the document snapshotDigest hashes, before
// canonicalisation.
func snapshotDocument(tools []Tool) ([]byte, error) {
	doc := struct {
		V     int        `json:"v"`
		Tools []abi.Tool `json:"tools"`
	}{V: snapshotVersion, Tools: make([]abi.Tool, len(tools))}
	for i, t := range tools {
		t.InputSchema = nil
		doc.Tools[i] = t.ABI()
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, &Error{Index: -1, Err: wrap(ErrInvalidTool, "snapshot document: %v", err)}
	}
	return raw, nil
}

// emptyDigest is the digest of a catalog without tools.
var emptyDigest = func() string {
	d, err := snapshotDigest(nil)
	if err != nil {
		panic(err) // a constant document
	}
	return d
}()

// MarshalNative returns the snapshot's tools, sorted by id, as a native
// format document {"tools":[…]} with every field of every record: id,
// name, aliases, description, input_schema (as stored: compacted, key
// order kept), schema_digest, provenance, source, effect, hints and
// policy_digest. Parse with FormatNative reads it back into the same
// records, so a store built from them has the same Digest: it is how a
// snapshot is shipped to another process.
//
// A document larger than MaxFileBytes, which Parse would refuse, is an
// *Error wrapping ErrTooLarge.
func (s *Snapshot) MarshalNative() ([]byte, error) {
	doc := struct {
		Tools []abi.Tool `json:"tools"`
	}{Tools: make([]abi.Tool, len(s.tools))}
	for i, t := range s.tools {
		doc.Tools[i] = t.ABI()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Kept literal, as the record holds them; escaping would not change
	// any digest, only make the document differ from its source.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, &Error{Index: -1, Err: wrap(ErrInvalidTool, "native document: %v", err)}
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > MaxFileBytes {
		return nil, &Error{Index: -1, Err: wrap(ErrTooLarge, "native document of %d tools is %d bytes, more than %d", len(s.tools), len(out), MaxFileBytes)}
	}
	return out, nil
}
