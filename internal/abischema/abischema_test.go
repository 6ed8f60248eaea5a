package abischema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
)

func TestCheckMemberNames(t *testing.T) {
	tests := []struct {
		doc string
		ok  bool
	}{
		{`{"verdict":"accepted","evidence":{"Anything":1,"anything":2}}`, true},
		{`{"verdict":"rejected","findings":[],"Verdict":"accepted"}`, false},
		{`{"verdict":"accepted","evidence":{"a":1},"Findings":[]}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","Severity":"advisory"}]}`, false},
		{`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","details":{"Code":1}}]}`, true},
		{`{"verdict":"accepted","evidence":{"a":1},"Extra":1,"extra":2}`, false},
		{`[1,2]`, true},
	}
	for _, tt := range tests {
		err := CheckMemberNames([]byte(tt.doc))
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

func FuzzCheckMemberNames(f *testing.F) {
	f.Add([]byte(`{"verdict":"rejected","Verdict":"accepted"}`))
	f.Add([]byte(`{"findings":[{"Code":1}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		_ = CheckMemberNames(doc)
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
