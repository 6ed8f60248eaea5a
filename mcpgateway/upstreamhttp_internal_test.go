package mcpgateway

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

type wrappedTransport struct{ http.RoundTripper }

// The gateway's upstream transport keeps net/http's settings, sized to the
// sessions: from DefaultTransport as it is, from net/http's defaults when
// an embedder replaced it with another RoundTripper, clamped for an
// absurd max_sessions.
func TestNewUpstreamHTTP(t *testing.T) {
	def := http.DefaultTransport.(*http.Transport)
	tests := []struct {
		name          string
		base          http.RoundTripper
		maxSessions   int
		perHost, idle int
	}{
		{name: "default transport", base: def, maxSessions: 64, perHost: 128, idle: 512},
		{name: "few sessions keep DefaultTransport's total", base: def, maxSessions: 4, perHost: 8, idle: def.MaxIdleConns},
		{name: "replaced by a wrapper", base: wrappedTransport{def}, maxSessions: 64, perHost: 128, idle: 512},
		{name: "absurd max_sessions", base: def, maxSessions: math.MaxInt, perHost: 1 << 16, idle: 1 << 18},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newUpstreamHTTP(tt.base, tt.maxSessions)
			assert.NotSame(t, def, tr, "DefaultTransport itself is never changed")
			assert.Equal(t, tt.perHost, tr.MaxIdleConnsPerHost)
			assert.Equal(t, tt.idle, tr.MaxIdleConns)
			assert.NotNil(t, tr.Proxy, "proxies from the environment, as DefaultTransport")
			assert.True(t, tr.ForceAttemptHTTP2)
			assert.NotZero(t, tr.IdleConnTimeout)
		})
	}
	assert.Equal(t, 100, def.MaxIdleConns, "DefaultTransport untouched")
	assert.Equal(t, 0, def.MaxIdleConnsPerHost, "DefaultTransport untouched")
}
