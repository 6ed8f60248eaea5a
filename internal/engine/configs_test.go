package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
)

// TestSentConfigs: an instance is counted on to hold the last
// abi.ConfigCacheSize distinct configs it was sent, and none after
// ForgetConfigs.
func TestSentConfigs(t *testing.T) {
	var i Instance
	for n := range abi.ConfigCacheSize + 1 {
		i.SentConfig(fmt.Sprint(n))
		i.SentConfig(fmt.Sprint(n)) // a repeat is not a new config
	}
	assert.False(t, i.HoldsConfig("0"), "the oldest beyond the bound")
	for n := 1; n <= abi.ConfigCacheSize; n++ {
		assert.True(t, i.HoldsConfig(fmt.Sprint(n)), n)
	}
	assert.Len(t, i.configs, abi.ConfigCacheSize)
	i.ForgetConfigs()
	assert.False(t, i.HoldsConfig("1"))
}
