package gatee2e

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
)

// passConfirmer is a Confirmer for tests of what gates do with a
// confirmation: the token is the JSON of the abi.Confirmation the gates
// get, so a test can hand them one for another tool, or with an empty
// token, exactly as a faulty or hostile Confirmer could.
type passConfirmer struct{}

func (passConfirmer) Confirm(_ context.Context, req host.ConfirmationRequest) (*abi.Confirmation, error) {
	var c abi.Confirmation
	if err := json.Unmarshal([]byte(req.Token), &c); err != nil {
		return nil, fmt.Errorf("test token %q: %w", req.Token, err)
	}
	return &c, nil
}

// passToken is the RunOptions.ConfirmationToken passConfirmer turns into
// c; "" (no confirmation) for nil.
func passToken(c *abi.Confirmation) string {
	if c == nil {
		return ""
	}
	b, _ := json.Marshal(c)
	return string(b)
}
