package host

import (
	"bytes"
	"encoding/json"

	"github.com/gatehost/gatehost/abi"
)

// wireConfig is a stage config as json.Marshal puts a json.RawMessage
// holding it into a request (compacted, <, >, &, U+2028 and U+2029
// escaped), once at load: encoding/json would do it again for every
// request, which for a config of kilobytes (the policy gate's policy text)
// costs the host more than the rest of the request. nil for none (as
// omitempty leaves an empty config out).
func wireConfig(config []byte) ([]byte, error) {
	if len(config) == 0 {
		return nil, nil
	}
	return json.Marshal(json.RawMessage(config))
}

// requestHead is abi.Request's members before config, in order.
type requestHead struct {
	ABIVersion   int             `json:"abi_version"`
	MinorVersion int             `json:"abi_minor"`
	RunID        string          `json:"run_id"`
	Pipeline     string          `json:"pipeline"`
	Stage        string          `json:"stage"`
	SubjectKind  abi.SubjectKind `json:"subject_kind"`
	Subject      json.RawMessage `json:"subject"`
}

// encodeRequest encodes r with config (wireConfig's, or nil for none or
// left out; r.Config is not read) into the bytes json.Marshal gives for r
// with that config (TestEncodeRequestAsMarshal), without encoding the
// config again.
func encodeRequest(r abi.Request, config []byte) ([]byte, error) {
	if config == nil {
		r.Config = nil
		return json.Marshal(r)
	}
	head, err := json.Marshal(requestHead{ABIVersion: r.ABIVersion, MinorVersion: r.MinorVersion, RunID: r.RunID,
		Pipeline: r.Pipeline, Stage: r.Stage, SubjectKind: r.SubjectKind, Subject: r.Subject})
	if err != nil {
		return nil, err
	}
	ctx, err := json.Marshal(r.Context)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(head) + len(config) + len(r.ConfigDigest) + len(ctx) + 44)
	b.Write(head[:len(head)-1]) // without its '}'
	b.WriteString(`,"config":`)
	b.Write(config)
	if r.ConfigDigest != "" { // hex: nothing to escape
		b.WriteString(`,"config_digest":"`)
		b.WriteString(r.ConfigDigest)
		b.WriteByte('"')
	}
	b.WriteString(`,"context":`)
	b.Write(ctx)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// configDigest is a request's config_digest for the config member's bytes
// as sent (wireConfig's); "" for none.
func configDigest(wire []byte) string {
	if wire == nil {
		return ""
	}
	return abi.ConfigDigestPrefix + digest(wire)
}
