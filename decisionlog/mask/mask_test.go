package mask

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePointer(t *testing.T) {
	for _, tc := range []struct {
		in     string
		tokens []string
		err    bool
	}{
		{in: "/result/findings/0/evidence", tokens: []string{"result", "findings", "0", "evidence"}},
		{in: "/input/a~1b/c~0d", tokens: []string{"input", "a/b", "c~d"}},
		{in: "/input/~01", tokens: []string{"input", "~1"}},
		{in: "/input/", tokens: []string{"input", ""}},
		{in: "", err: true},
		{in: "result", err: true},
		{in: "/input/a~2", err: true},
		{in: "/input/a~", err: true},
		{in: "/seq", err: true},
		{in: "/hash", err: true},
		{in: "/prev", err: true},
		{in: "/chain", err: true},
		{in: "/erased", err: true},
	} {
		p, err := ParsePointer(tc.in)
		if tc.err {
			require.ErrorIs(t, err, ErrInvalidPointer, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.tokens, p.tokens)
		assert.Equal(t, tc.in, p.String())
	}
}

func TestPointerApply(t *testing.T) {
	doc := func() map[string]any {
		return map[string]any{"a": []any{"x", map[string]any{"b": 1.0}}, "c/d": "e", "": "empty"}
	}
	for _, tc := range []struct {
		ptr   string
		match bool
	}{
		{"/a/1/b", true}, {"/a/0", true}, {"/c~1d", true}, {"/", true},
		{"/a/2", false}, {"/a/-", false}, {"/a/01", false}, {"/a/x", false}, {"/a/0/deeper", false}, {"/zz", false},
	} {
		p, err := ParsePointer(tc.ptr)
		require.NoError(t, err)
		d := doc()
		assert.Equal(t, tc.match, p.Apply(d), tc.ptr)
	}
}
