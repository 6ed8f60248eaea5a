package abischema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
)

func TestCheckNames(t *testing.T) {
	tests := []struct {
		doc string
		ok  bool
	}{
		{`{"verdict":"accepted","evidence":{"Anything":1,"anything":2}}`, false},
		{`{"verdict":"rejected","findings":[],"Verdict":"accepted"}`, false},
		{`{"verdict":"accepted","evidence":{"a":1},"Findings":[]}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","Severity":"advisory"}]}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","details":{"Code":1}}]}`, true},
		{`{"verdict":"accepted","evidence":{"a":1},"Extra":1,"extra":2}`, false},
		{`[1,2]`, true},
		{`{"verdict":"inconclusive","evidence":{"a":1},"verdict":"accepted"}`, false},
		{`{"verdict":"accepted","evidence":{"a":1},"findings":[{"code":"x","severity":"advisory","message":"m","ſeverity":"blocking"}]}`, false},
		{`{"verdict":"accepted","evidence":{"a":1},"findingſ":[]}`, false},
		{`{"verdict":"accepted","evidence":{"K":1,"k":2}}`, false},
		{`{"verdict":"accepted","evidence":{"a":{"b":1,"b":2}}}`, false},
		{"{\"verdict\":\"accepted\",\"evidence\":{\"a\":\"\xff\"}}", false},
	}
	for _, tt := range tests {
		err := CheckNames([]byte(tt.doc), ResponseStructs)
		assert.Equal(t, tt.ok, err == nil, "%s: %v", tt.doc, err)
	}
}

func TestResponseSchema(t *testing.T) {
	tests := []struct {
		doc string
		ok  bool
	}{
		{`{"verdict":"accepted","evidence":{"checked":true}}`, true},
		{`{"verdict":"accepted"}`, false},
		{`{"verdict":"accepted","evidence":{}}`, false},
		{`{"verdict":"accepted","evidence":{"a":1},"findings":[{"code":"x","severity":"blocking","message":"m"}]}`, false},
		{`{"verdict":"accepted","evidence":{"a":1},"findings":[{"code":"x","severity":"advisory","message":"m"}]}`, true},
		{`{"verdict":"rejected"}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","severity":"advisory","message":"m"}]}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m"}]}`, true},
		{`{"verdict":"inconclusive","reason":"gate_error"}`, true},
		{`{"verdict":"accepted","reason":"plugin_trap","evidence":{"a":1}}`, false},
		{`{"verdict":"accepted","basis":"verified","reason":"unspecified","evidence":{"a":1}}`, false},
		{`{"verdict":"rejected","reason":"policy","findings":[{"code":"x","severity":"blocking","message":"m"}]}`, true},
		{`{"verdict":"maybe"}`, false},
		{`{"verdict":"rejected","findings":[{"code":"X Y","severity":"blocking","message":"m"}]}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","path":"no-slash"}]}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","path":"/a~1b/0"}]}`, true},
		{`not json`, false},
		{`{"verdict":"inconclusive"} {}`, false},
	}
	for _, tt := range tests {
		err := Validate(abi.SchemaResponse, []byte(tt.doc))
		assert.Equal(t, tt.ok, err == nil, "%s: %v", tt.doc, err)
	}
}

func TestCheckNamesSubjects(t *testing.T) {
	tests := []struct {
		doc     string
		structs Structs
		ok      bool
	}{
		{`{"actions":[{"tool":"delete_repository","TOOL":"get_me"}]}`, ProposalStructs, false},
		{`{"actions":[{"TOOL":"get_me"}]}`, ProposalStructs, false},
		{`{"actions":[{"tool":"delete_file","tool":"get_me"}]}`, ProposalStructs, false},
		{`{"actions":[{"tool":"delete_file"}],"actions":[]}`, ProposalStructs, false},
		{`{"actions":[{"tool":"x","parameterſ":{}}]}`, ProposalStructs, false},
		{`{"actions":[{"tool":"x","preconditions":[{"key":"a","Value":1}]}]}`, ProposalStructs, false},
		{`{"actions":[{"tool":"x","parameters":{"Owner":"a","repo":"b"}}]}`, ProposalStructs, true},
		{`{"actions":[{"tool":"x","parameters":{"owner":"a","OWNER":"b"}}]}`, ProposalStructs, false},
		{`{"tool":"x","Parameters":{}}`, ToolCallStructs, false},
		{`{"tool":"x","parameters":{"Tool":1}}`, ToolCallStructs, true},
		{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), nil, false},
	}
	for _, tt := range tests {
		err := CheckNames([]byte(tt.doc), tt.structs)
		assert.Equal(t, tt.ok, err == nil, "%s: %v", tt.doc, err)
	}
}

func TestDecodeTrailing(t *testing.T) {
	for _, doc := range []string{`{"a":1}}`, `{"a":1}]`, `{} {}`, `{"a":1} x`} {
		_, err := Decode([]byte(doc))
		assert.Error(t, err, doc)
	}
	_, err := Decode([]byte("{\"a\":1}\n\t "))
	assert.NoError(t, err)
}

func FuzzCheckNames(f *testing.F) {
	f.Add([]byte(`{"verdict":"rejected","Verdict":"accepted"}`))
	f.Add([]byte(`{"findings":[{"Code":1}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		_ = CheckNames(doc, ResponseStructs)
		_ = CheckNames(doc, ProposalStructs)
		_ = Validate(abi.SchemaResponse, doc)
	})
}

func TestHugeNumbersRefused(t *testing.T) {
	for _, doc := range []string{
		`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","action_index":1e9999999}]}`,
		`{"verdict":"inconclusive","evidence":{"n":1e400}}`,
		`{"verdict":"inconclusive","evidence":{"n":` + strings.Repeat("1", 100) + `}}`,
	} {
		assert.Error(t, Validate(abi.SchemaResponse, []byte(doc)))
	}
	assert.Error(t, Validate(abi.SchemaProposal, []byte(`{"actions":[{"depends_on":[1e9999999]}]}`)))
	assert.NoError(t, Validate(abi.SchemaProposal, []byte(`{"actions":[{"depends_on":[]}],"context":{"n":1.5e300}}`)))
}
