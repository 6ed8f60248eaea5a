package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestServeApprovalTTLFlag: --approval-ttl out of 1s..24h is a usage error
// (0 too, although the library reads a zero TTL as the default).
func TestServeApprovalTTLFlag(t *testing.T) {
	for _, v := range []string{"0s", "999ms", "-1m", "25h"} {
		code, _, errOut := runCLI("serve", "--approval-ttl", v)
		assert.Equal(t, exitUsage, code, v)
		assert.Contains(t, errOut, "--approval-ttl", v)
	}
}
