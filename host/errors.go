package host

import (
	"errors"

	"github.com/gatehost/gatehost/abi"
)

// Sentinels for the reason codes the host decides, one per code, for
// errors.Is on a *PluginError: errors.Is(err, host.ErrPluginTimeout).
var (
	ErrPluginTrap        = errors.New(abi.ReasonPluginTrap)
	ErrPluginTimeout     = errors.New(abi.ReasonPluginTimeout)
	ErrPluginOutOfMemory = errors.New(abi.ReasonPluginOutOfMemory)
	ErrABIViolation      = errors.New(abi.ReasonABIViolation)
	ErrPluginQuarantined = errors.New(abi.ReasonPluginQuarantined)
	ErrHostOverloaded    = errors.New(abi.ReasonHostOverloaded)
	ErrHostError         = errors.New(abi.ReasonHostError)
	ErrCanceled          = errors.New(abi.ReasonCanceled)
)

var codeErrors = map[string]error{
	abi.ReasonPluginTrap:        ErrPluginTrap,
	abi.ReasonPluginTimeout:     ErrPluginTimeout,
	abi.ReasonPluginOutOfMemory: ErrPluginOutOfMemory,
	abi.ReasonABIViolation:      ErrABIViolation,
	abi.ReasonPluginQuarantined: ErrPluginQuarantined,
	abi.ReasonHostOverloaded:    ErrHostOverloaded,
	abi.ReasonHostError:         ErrHostError,
	abi.ReasonCanceled:          ErrCanceled,
}

// PluginError is a stage the host decided inconclusive because its plugin
// did not produce a valid answer, or was not called (quarantine, overload,
// cancellation). StageResult.Err and Decision.Err return it.
//
// errors.Is(err, ErrPluginTrap) (or another Err* of the same code) matches
// on Code; errors.Unwrap gives Cause.
type PluginError struct {
	Plugin string
	Stage  string
	// Code is one of the abi.Reason* codes the host decides.
	Code string
	// Cause is what went wrong underneath, such as the guest's trap.
	Cause error
}

func (e *PluginError) Error() string {
	s := "stage " + e.Stage + " (plugin " + e.Plugin + "): " + e.Code
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Is matches the sentinel of e.Code.
func (e *PluginError) Is(target error) bool {
	c, ok := codeErrors[e.Code]
	return ok && c == target
}

func (e *PluginError) Unwrap() error { return e.Cause }

// Err returns the *PluginError of a stage the host decided, or nil when the
// gate answered (whatever its verdict) or the stage was skipped.
func (r StageResult) Err() error {
	if r.err == nil {
		return nil
	}
	return r.err
}

// Err joins the *PluginError of every stage the host decided; nil if none.
func (d *Decision) Err() error {
	var errs []error
	for _, s := range d.Stages {
		if s.err != nil {
			errs = append(errs, s.err)
		}
	}
	return errors.Join(errs...)
}
