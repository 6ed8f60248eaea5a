package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/internal/ijson"
)

var fuzzKinds = []abi.SubjectKind{abi.SubjectProposal, abi.SubjectToolCall, abi.SubjectMerge}

// FuzzValidateSubject feeds arbitrary bytes as a subject of each kind, as
// Check does before any stage runs. Nothing may panic; every refusal is a
// *SubjectError wrapping ErrBadSubject.
func FuzzValidateSubject(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "proposals", "*.json"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b, uint8(0))
		}
	}
	for _, s := range []string{`{"actions":[]}`, `{"tool":"a","arguments":{}}`, `{"actions":[{"depends_on":[1e400]}]}`, `[]`, `{"a":"\ud800"}`, `{"tool":"t","parameters":{"\udc00":1}}`, `{"tool":"t","parse_error":""}`} {
		for i := range fuzzKinds {
			f.Add([]byte(s), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, k uint8) {
		_, err := validateSubject(fuzzKinds[int(k)%len(fuzzKinds)], b, MaxSubjectBytes)
		if err == nil {
			// No stage ever gets a string two readers could read apart.
			if ierr := ijson.Check(b); ierr != nil {
				t.Fatalf("accepted %q, which is not I-JSON: %v", b, ierr)
			}
			return
		}
		var se *SubjectError
		if !errors.As(err, &se) || !errors.Is(err, ErrBadSubject) {
			t.Fatalf("error %v is a %T, not a *SubjectError", err, err)
		}
	})
}

var fuzzFormats = []subject.Format{subject.FormatAuto, subject.FormatNative, subject.FormatMCP, subject.FormatOpenAI, subject.FormatAnthropic}

// FuzzDecodeSubject feeds arbitrary bytes to Check's reading of its raw
// input, as a subject of each kind in each format. Nothing may panic; every
// refusal is a *SubjectError wrapping ErrBadSubject; what is accepted is a
// valid native subject of the kind, which no stage could read two ways.
func FuzzDecodeSubject(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "proposals", "*.json"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			for k := range fuzzKinds {
				f.Add(b, uint8(k), uint8(0))
			}
		}
	}
	for _, s := range []string{`{"actions":[]}`, `{"tool":"a","parameters":{}}`, `{"name":"a","arguments":{}}`,
		`{"type":"tool_use","id":"t","name":"a","input":{"k":"\ud800"}}`, `{"id":"c","type":"function","function":{"name":"a","arguments":"{\"k\":1e400}"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]`, `{"file_changes":[{"path":"a","after":"b"}]}`, "\xff", `[]`} {
		for k := range fuzzKinds {
			for fi := range fuzzFormats {
				f.Add([]byte(s), uint8(k), uint8(fi))
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, k, fi uint8) {
		kind, format := fuzzKinds[int(k)%len(fuzzKinds)], fuzzFormats[int(fi)%len(fuzzFormats)]
		native, _, err := decodeAs(kind, b, format, MaxSubjectBytes)
		if err != nil {
			var se *SubjectError
			if !errors.As(err, &se) || !errors.Is(err, ErrBadSubject) {
				t.Fatalf("error %v is a %T, not a *SubjectError", err, err)
			}
			return
		}
		if _, verr := validateSubject(kind, native, MaxSubjectBytes); verr != nil {
			t.Fatalf("accepted %q as %s, whose native form %q is invalid: %v", b, kind, native, verr)
		}
	})
}
