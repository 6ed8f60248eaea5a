package subject

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var fuzzFormats = []Format{FormatAuto, FormatNative, FormatMCP, FormatOpenAI, FormatAnthropic}

// FuzzParseProposal checks that no input panics, that every failure is an
// *Error, and that every success re-encodes to a valid native proposal that
// parses back to itself.
func FuzzParseProposal(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for i := range fuzzFormats {
			f.Add(data, uint8(i))
		}
	}
	for _, s := range []string{
		`{"actions":[{"tool":"a","preconditions":[{"key":"k","value":null}],"metadata":null,"depends_on":[0]}]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,{"y":null}]}}}]`,
		`{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"{\"k\":\"\\ud800\"}"}}]}}]}`,
		`{"output":[{"type":"reasoning"},{"type":"function_call","call_id":"c","name":"a","arguments":"[]"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t","name":"a","input":7}]}`,
		`{"actions":[],"Actions":[]}`,
		`[]`, `{}`, `null`, ``,
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, fi uint8) {
		p, _, err := ParseProposal(data, fuzzFormats[int(fi)%len(fuzzFormats)])
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, not *Error", err, err)
			}
			return
		}
		requireValidNative(t, p)
	})
}
