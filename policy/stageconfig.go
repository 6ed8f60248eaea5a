package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// StageConfig is the policy gate's stage config (docs/POLICY.md): what
// the gate evaluates, and what every check of it before a call (the
// config loader, the MCP gateway at each listing) reads, through
// ParseStageConfig alone, so that no check reads less of it than the
// gate does.
type StageConfig struct {
	Policies []Source          `json:"policies"`
	Claims   map[string]string `json:"claims,omitempty"`
	// Windows declares the counting windows the policies read in
	// context.session: each must be one the host counts.
	Windows []string `json:"windows,omitempty"`
}

// ParseStageConfig decodes a stage config strictly (an unknown key is an
// error), checks its claim types and windows, and parses its policies
// into a Set and the Options the set is checked and evaluated with. An
// empty or null config is {}. Errors name the config key ("claims.X:",
// "windows:", "policies:"); a policy that does not parse wraps a
// *ParseError naming FILE:LINE:COLUMN.
func ParseStageConfig(raw json.RawMessage) (*Set, Options, error) {
	var cfg StageConfig
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, Options{}, err
	}
	o := Options{Claims: map[string]ClaimType{}, Windows: cfg.Windows}
	for name, t := range cfg.Claims {
		ct, err := ParseClaimType(t)
		if err != nil {
			return nil, Options{}, fmt.Errorf("claims.%s: %w", name, err)
		}
		o.Claims[name] = ct
	}
	if err := ValidateOptions(o); err != nil {
		return nil, Options{}, fmt.Errorf("windows: %w", err)
	}
	set, err := Parse(cfg.Policies)
	if err != nil {
		return nil, Options{}, fmt.Errorf("policies: %w", err)
	}
	return set, o, nil
}
