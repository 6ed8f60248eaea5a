package abi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
)

func TestIsSessionDigest(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		d    string
		want bool
	}{
		{"sha256:" + hex, true},
		{hex, false}, // a schema digest has no prefix; a session digest must
		{"", false},
		{"sha256:", false},
		{"sha256:" + strings.ToUpper(hex), false},
		{"SHA256:" + hex, false},
		{"sha512:" + hex, false},
		{"sha256:" + hex[:63], false},
		{"sha256:" + hex + "0", false},
		{"sha256:" + hex[:63] + "g", false},
		{" sha256:" + hex, false},
	} {
		assert.Equal(t, tc.want, abi.IsSessionDigest(tc.d), "%q", tc.d)
		assert.Equal(t, len(tc.d) == 64 && tc.d == hex, abi.IsSchemaDigest(tc.d), "%q", tc.d)
	}
}
