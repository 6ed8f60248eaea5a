package compose

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/config"
)

// TestNewTracer: off is a nil tracer with a nil provider; an unknown
// exporter is refused; an OTLP tracer dials nothing at start and shuts
// down twice without error.
func TestNewTracer(t *testing.T) {
	tr, err := NewTracer(context.Background(), config.Tracing{Exporter: config.TracingNone}, "v1", nil)
	require.NoError(t, err)
	assert.Nil(t, tr)
	assert.Nil(t, tr.Provider(), "off is an untyped nil provider")
	assert.NoError(t, tr.Shutdown(context.Background()))
	_, err = NewTracer(context.Background(), config.Tracing{Exporter: "zipkin"}, "v1", nil)
	assert.ErrorContains(t, err, `exporter "zipkin"`)
	tr, err = NewTracer(context.Background(), config.Tracing{Exporter: config.TracingOTLPHTTP, Endpoint: "127.0.0.1:1", Insecure: true,
		SampleRatio: 1, ServiceName: "x", Timeout: time.Second}, "v1", nil)
	require.NoError(t, err, "nothing is dialled at start")
	assert.NotNil(t, tr.Provider())
	require.NoError(t, tr.Shutdown(context.Background()), "no span queued: nothing to lose")
	assert.NoError(t, tr.Shutdown(context.Background()), "twice is fine")
}
