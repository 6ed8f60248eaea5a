package abi_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// The specification names the minor it describes in several places (the
// header, the request's abi_minor, the history, the constants); each must
// be abi.MinorVersion, so that a revision cannot leave the document behind.
func TestSpecNamesTheMinor(t *testing.T) {
	spec, err := os.ReadFile("SPEC.md")
	require.NoError(t, err)
	for _, want := range []string{
		fmt.Sprintf("| ABI major | `%d` (`abi.MajorVersion`) |", abi.MajorVersion),
		fmt.Sprintf("| ABI minor | `%d` (`abi.MinorVersion`) |", abi.MinorVersion),
		fmt.Sprintf("the host's ABI minor (§10); `%d` for this document.", abi.MinorVersion),
		fmt.Sprintf("Minor %d added", abi.MinorVersion),
		fmt.Sprintf("| ABI major / minor | %d / %d |", abi.MajorVersion, abi.MinorVersion),
	} {
		assert.True(t, strings.Contains(string(spec), want), "abi/SPEC.md does not say %q", want)
	}
}
