package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestCheckTracing: gatehost check with a tracing: section exports its
// decision's spans before it exits.
func TestCheckTracing(t *testing.T) {
	var mu sync.Mutex
	var names []string
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		var req coltracepb.ExportTraceServiceRequest
		require.NoError(t, proto.Unmarshal(raw, &req))
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
	}))
	t.Cleanup(col.Close)
	cfg := writeConfig(t, fmt.Sprintf("tracing: {exporter: otlp-http, endpoint: %q}\n", col.URL))
	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
	require.Equal(t, exitAccepted, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{"gatehost.decision", "gatehost.stage"}, names)
}
