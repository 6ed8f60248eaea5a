package hostkit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/internal/hostkit"
)

func TestPartialGrants(t *testing.T) {
	ctx := context.Background()
	assert.False(t, hostkit.PartialGrants(ctx), "off unless asked for")
	assert.True(t, hostkit.PartialGrants(hostkit.WithPartialGrants(ctx)))
	type other struct{}
	assert.False(t, hostkit.PartialGrants(context.WithValue(ctx, other{}, true)), "only its own key")
}
