//go:build unix

package datasource_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
)

// TestOpenRefusesSpecialFiles: a documents file or a collection file naming
// a named pipe, a device or a directory, or over MaxFileBytes, is refused at
// once, naming the file (and the collection).
func TestOpenRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	for _, c := range append(fx.NotFiles(), fx.OverCap(t, "db.json", datasource.MaxFileBytes)) {
		t.Run(c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error { _, err := datasource.OpenDocuments(c.Path); return err })
			require.ErrorIs(t, err, c.Want)
			assert.Equal(t, "datasource: "+c.Path+": "+c.Reason, err.Error())

			err = safefiletest.Returns(t, func() error {
				_, err := datasource.OpenCollections(map[string]string{"users": c.Path})
				return err
			})
			require.ErrorIs(t, err, c.Want)
			assert.Equal(t, "datasource: collection users: "+c.Path+": "+c.Reason, err.Error())
		})
	}
}
