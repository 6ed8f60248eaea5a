package domain

import "github.com/gatehost/gatehost/abi"

// effects validates a capability's declared effects (DOMAIN.md, "Effects")
// and records them on dc.
func (v *validator) effects(capName string, dc *abi.DomainCapability, cf *capFile) {
	if len(cf.Effects) > 0 {
		v.add(&Error{Capability: capName, Field: "effects", Reason: "not supported yet"})
	}
}
