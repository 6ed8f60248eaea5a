package host

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
)

// TestCapabilitiesAreABIs: the host grants exactly the capabilities abi
// names, registered under abi's names.
func TestCapabilitiesAreABIs(t *testing.T) {
	assert.Equal(t, []string{abi.CapabilityCatalog, abi.CapabilityCheck, abi.CapabilityCounters, abi.CapabilityPolicy, abi.CapabilityQuery, abi.CapabilitySchema, abi.CapabilitySession}, knownCapabilities())
	for _, op := range []string{abi.OpCatalogGet, abi.OpCatalogList, abi.OpSessionGet, abi.OpQueryCapability, abi.OpQueryRows, abi.OpPolicyMerge, abi.OpCheckRun, abi.OpSchemaValidate, abi.OpSchemaValidateMany, abi.OpCountersGet} {
		_, ok := capabilities[abi.CapabilityOf(op)]
		assert.True(t, ok, "%s has a capability", op)
	}
}
