package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusWriterUnwrap: http.ResponseController reaches the writer the
// status recorder wraps (Flush, deadlines), and the status is recorded.
func TestStatusWriterUnwrap(t *testing.T) {
	rec := httptest.NewRecorder()
	w := &statusWriter{ResponseWriter: rec}
	assert.Same(t, rec, w.Unwrap())
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusAccepted)
	require.NoError(t, rc.Flush())
	assert.True(t, rec.Flushed, "Flush reached the wrapped writer")
	assert.Equal(t, http.StatusAccepted, w.status)
	// The recorder has no deadlines: the controller says so rather than
	// stopping at the wrapper.
	assert.ErrorIs(t, rc.SetWriteDeadline(time.Now()), http.ErrNotSupported)
}
