// Package mergetest is an in-memory host for testing the merge gate
// natively: a policy and checks with fixed behaviour.
package mergetest

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

// Host is an sdk.Host that answers policy.merge and check.run for native tests: a file under
// deny/ is denied, one under error/ makes the policy fail; checks named
// pass, fail and broken pass, fail and cannot start; others are not
// configured.
type Host struct {
	Granted []string
	Calls   []string
}

func (h *Host) Log(sdk.Level, string) {}

func (h *Host) Call(op string, request []byte) ([]byte, error) {
	h.Calls = append(h.Calls, op)
	granted := h.Granted
	if granted == nil {
		granted = []string{abi.CapabilityPolicy, abi.CapabilityCheck}
	}
	capab := abi.CapabilityOf(op)
	ok := false
	for _, g := range granted {
		ok = ok || g == capab
	}
	if !ok {
		return nil, &abi.CallError{Code: abi.ErrCodeCapabilityDenied, Message: "not granted"}
	}
	var res any
	switch op {
	case abi.OpPolicyMerge:
		var req abi.PolicyMergeRequest
		if err := json.Unmarshal(request, &req); err != nil {
			return nil, err
		}
		a := abi.PolicyMergeAnswer{Decision: abi.PolicyAllow, Policy: "fake"}
		for _, f := range req.Files {
			if strings.HasPrefix(f.Path, "error/") {
				return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: "policy engine down"}
			}
			if strings.HasPrefix(f.Path, "deny/") {
				a.Decision = abi.PolicyDeny
				a.Denials = append(a.Denials, abi.PolicyDenial{Path: f.Path, Rule: "deny-dir"})
			}
		}
		res = a
	case abi.OpCheckRun:
		var req abi.CheckRunRequest
		if err := json.Unmarshal(request, &req); err != nil {
			return nil, err
		}
		switch req.Name {
		case "pass":
			res = abi.CheckRunAnswer{Name: req.Name, Status: abi.CheckPassed}
		case "fail":
			res = abi.CheckRunAnswer{Name: req.Name, Status: abi.CheckFailed, ExitCode: 1, OutputTail: "FAIL"}
		case "broken":
			return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: "cannot start"}
		default:
			res = abi.CheckRunAnswer{Name: req.Name, Status: abi.CheckNotConfigured, ExitCode: -1}
		}
	default:
		return nil, errors.New("unknown op")
	}
	return json.Marshal(res)
}
