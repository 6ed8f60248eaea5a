//go:build unix

package domain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
)

// TestLoadRefusesSpecialFiles: a domain catalog path naming a named pipe, a
// device or a directory, or a file over MaxCatalogBytes, is refused at once.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	for _, c := range append(fx.NotFiles(), fx.OverCap(t, "domain.yaml", domain.MaxCatalogBytes)) {
		t.Run(c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error { _, err := domain.Load(c.Path); return err })
			require.ErrorIs(t, err, c.Want)
			assert.Equal(t, "domain: "+c.Path+": "+c.Reason, err.Error())
		})
	}
}
