package catalog

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUpdateGenerationOverflow(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	s.cur.Store(&Snapshot{gen: math.MaxUint64 - 1})

	snap, err := s.Update(func(*Builder) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), snap.Generation())

	called := false
	_, err = s.Update(func(*Builder) error { called = true; return nil })
	require.ErrorIs(t, err, ErrGenerationOverflow)
	assert.False(t, called)
	assert.Same(t, snap, s.Snapshot())
}
