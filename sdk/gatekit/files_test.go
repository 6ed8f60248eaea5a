//go:build unix

package gatekit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
	"github.com/gatehost/gatehost/sdk/gatekit"
)

// TestLoadCasesRefusesSpecialFiles: a case file that is a named pipe, a
// device or a directory, or over MaxCaseBytes, fails LoadCases at once.
func TestLoadCasesRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	for _, c := range append(fx.NotFiles(), fx.OverCap(t, "big", gatekit.MaxCaseBytes)) {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			entry := filepath.Join(dir, "case.json")
			require.NoError(t, os.Symlink(c.Path, entry))
			err := safefiletest.Returns(t, func() error { _, err := gatekit.LoadCases(dir); return err })
			require.ErrorIs(t, err, c.Want)
			assert.Contains(t, err.Error(), entry+": "+c.Reason)
		})
	}
}
