package abischema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckNumbersNamesThePath: a refused number is reported with its JSON
// path, through objects and arrays; an accepted document costs no path.
func TestCheckNumbersNamesThePath(t *testing.T) {
	long := strings.Repeat("1", maxNumberLen+1)
	tests := []struct {
		name string
		doc  string
		want string // "" accepts
	}{
		{"top-level number out of range", `1e400`, `number 1e400 at "" is out of range`},
		{"in an object", `{"a":{"b":1e400,"c":1}}`, `number 1e400 at "/a/b" is out of range`},
		{"in an array", `{"a":[1,2,[3,-1e999]]}`, `number -1e999 at "/a/2/1" is out of range`},
		{"too long", `{"x":[{"y":` + long + `}]}`, `number at "/x/0/y" has 65 characters, more than 64`},
		{"names with slashes as given", `{"a/b":[1e400]}`, `number 1e400 at "/a/b/0" is out of range`},
		{"in range", `{"a":[1.5e300,-2,0.1,{"b":123456789012345678901234567890}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.want)
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"actions":[` + strings.Repeat(`{"tool":"t","parameters":{"n":1,"list":[1,2,3],"o":{"a":"b"}}},`, 20) + `{"tool":"t"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(doc); err != nil {
			b.Fatal(err)
		}
	}
}
