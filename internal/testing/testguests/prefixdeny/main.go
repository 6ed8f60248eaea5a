//go:build wasip1

// Command prefixdeny is a test gate whose config schema has a camelCase
// key, denyPrefixes, and refuses any other: it rejects a proposal whose
// action calls a tool starting with one of the prefixes, and accepts
// otherwise. Tests use it to show that a stage config reaches the gate
// with the author's key case.
package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

const schema = `{
  "type": "object",
  "properties": {"denyPrefixes": {"type": "array", "items": {"type": "string"}}},
  "required": ["denyPrefixes"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Gate{
		Descriptor: abi.Descriptor{
			Name: "prefixdeny", Version: "0.0.1",
			SubjectKinds: []abi.SubjectKind{abi.SubjectProposal},
			ConfigSchema: json.RawMessage(schema),
		},
		Evaluate: func(ctx context.Context, req sdk.Request) (abi.Response, error) {
			var cfg struct {
				DenyPrefixes []string `json:"denyPrefixes"`
			}
			if err := json.Unmarshal(req.Config, &cfg); err != nil {
				return abi.Response{}, err
			}
			p, err := req.Proposal()
			if err != nil {
				return abi.Response{}, err
			}
			for i, a := range p.Actions {
				for _, pre := range cfg.DenyPrefixes {
					if strings.HasPrefix(a.Tool, pre) {
						return abi.Response{Verdict: abi.Rejected, Findings: []abi.Finding{{
							Code: "denied_prefix", Severity: abi.Blocking, ActionIndex: &i,
							Message: "tool " + a.Tool + " starts with " + pre,
						}}}, nil
					}
				}
			}
			return abi.Response{Verdict: abi.Accepted, Basis: "verified", Evidence: map[string]any{
				"actions": len(p.Actions), "deny_prefixes": cfg.DenyPrefixes,
			}}, nil
		},
	})
}

func main() {}
