package sdk

import (
	"fmt"

	"github.com/gatehost/gatehost/abi"
)

// StatusError is a negative status from the call or result host functions:
// a fault in how the guest called, not a refusal by the capability.
type StatusError abi.Status

func statusError(n int32) error { return StatusError(n) }

func (e StatusError) Error() string {
	switch abi.Status(e) {
	case abi.StatusFault:
		return "sdk: host call fault: pointer or length outside memory"
	case abi.StatusNoResult:
		return "sdk: no host answer pending"
	case abi.StatusLength:
		return "sdk: host answer length mismatch"
	case abi.StatusTooLarge:
		return "sdk: host request too large"
	}
	return fmt.Sprintf("sdk: host call status %d", int32(e))
}
