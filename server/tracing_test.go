package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
)

// traceMarker is put in the subject's arguments: no exported byte may
// carry it.
const traceMarker = "TRACE-MARKER-c41e"

// receiver collects what an OTLP collector in the test was sent.
type receiver struct {
	mu   sync.Mutex
	raw  [][]byte
	reqs []*coltracepb.ExportTraceServiceRequest
}

func (rc *receiver) add(t testing.TB, raw []byte) {
	var req coltracepb.ExportTraceServiceRequest
	if !assert.NoError(t, proto.Unmarshal(raw, &req)) {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.raw = append(rc.raw, raw)
	rc.reqs = append(rc.reqs, &req)
}

// spans returns every span received, by name, and the resources' service
// names.
func (rc *receiver) spans() (byName map[string][]*tracepb.Span, services []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	byName = map[string][]*tracepb.Span{}
	for _, req := range rc.reqs {
		for _, rs := range req.ResourceSpans {
			services = append(services, attrOf(rs.Resource.Attributes, "service.name"))
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					byName[s.Name] = append(byName[s.Name], s)
				}
			}
		}
	}
	return byName, services
}

func (rc *receiver) rawBytes() []byte {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return bytes.Join(rc.raw, nil)
}

func attrOf(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue)
			case *commonpb.AnyValue_BoolValue:
				return fmt.Sprint(v.BoolValue)
			}
		}
	}
	return ""
}

// httpReceiver is an OTLP/HTTP collector at /v1/traces answering status.
func httpReceiver(t *testing.T, status int) (*receiver, string) {
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not OTLP/HTTP protobuf", http.StatusNotFound)
			return
		}
		assert.Equal(t, "t0ken", r.Header.Get("X-Collector-Key"), "configured headers are sent")
		raw, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		rc.add(t, raw)
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	t  testing.TB
	rc *receiver
}

func (g *grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	raw, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	g.rc.add(g.t, raw)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// grpcReceiver is an OTLP/gRPC collector on a loopback port.
func grpcReceiver(t *testing.T) (*receiver, string) {
	rc := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, &grpcCollector{t: t, rc: rc})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return rc, ln.Addr().String()
}

func markedSubject() []byte {
	return fmt.Appendf(nil, `{"id":%q,"actions":[{"id":"a","type":"tool_call","tool":"get_me","parameters":{"note":%q}}]}`, traceMarker, traceMarker)
}

// TestTracingExportedSpans: over OTLP/HTTP and OTLP/gRPC to a collector
// in the test, a check is a decision span whose parent is the caller's
// traceparent, with a stage span under it; the answer names the span; no
// exported byte carries the subject's arguments.
func TestTracingExportedSpans(t *testing.T) {
	for _, tc := range []struct {
		name    string
		section func(t *testing.T) (*receiver, string)
	}{
		{"otlp-http", func(t *testing.T) (*receiver, string) {
			rc, url := httpReceiver(t, http.StatusOK)
			return rc, fmt.Sprintf("tracing: {exporter: otlp-http, endpoint: %q, headers: {X-Collector-Key: t0ken}, service_name: gh-test, timeout: 30s}\n", url)
		}},
		{"otlp-grpc", func(t *testing.T) (*receiver, string) {
			rc, addr := grpcReceiver(t)
			return rc, fmt.Sprintf("tracing: {exporter: otlp-grpc, endpoint: %q, insecure: true, service_name: gh-test, timeout: 30s}\n", addr)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, section := tc.section(t)
			ts := startServe(t, writeServeConfig(t, t.TempDir(), serveParams{limits: section}), nil)
			const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
			a := ts.do(t, "POST", "/v1/pipelines/admission/check?session=s-7", markedSubject(),
				"Traceparent", "00-"+traceID+"-"+parentID+"-01", "X-Request-Id", "req-9")
			require.Equal(t, http.StatusOK, a.status, string(a.body))
			d := a.decision(t)
			require.Equal(t, abi.Accepted, d.Verdict)
			tr := a.header.Get("Traceresponse")
			require.Regexp(t, `^00-`+traceID+`-[0-9a-f]{16}-01$`, tr)
			require.NoError(t, ts.stop(t)) // flushes the spans

			byName, services := rc.spans()
			assert.Contains(t, services, "gh-test")
			require.Len(t, byName[host.SpanDecision], 1)
			require.Len(t, byName[host.SpanStage], 1)
			ds, ss := byName[host.SpanDecision][0], byName[host.SpanStage][0]
			assert.Equal(t, traceID, hex.EncodeToString(ds.TraceId))
			assert.Equal(t, parentID, hex.EncodeToString(ds.ParentSpanId), "the caller's span is the decision's parent")
			assert.Equal(t, strings.Split(tr, "-")[2], hex.EncodeToString(ds.SpanId), "traceresponse names the decision's span")
			assert.Equal(t, ds.SpanId, ss.ParentSpanId)
			assert.Equal(t, "admission", attrOf(ds.Attributes, string(host.AttrPipeline)))
			assert.Equal(t, d.RunID, attrOf(ds.Attributes, string(host.AttrRunID)))
			assert.Equal(t, "accepted", attrOf(ds.Attributes, string(host.AttrVerdict)))
			assert.Equal(t, "s-7", attrOf(ds.Attributes, string(host.AttrSession)))
			assert.Equal(t, "req-9", attrOf(ds.Attributes, string(host.AttrRequestID)))
			assert.Equal(t, "static-verify", attrOf(ss.Attributes, string(host.AttrStage)))
			assert.Equal(t, "enforce", attrOf(ss.Attributes, string(host.AttrMode)))
			assert.Len(t, attrOf(ss.Attributes, string(host.AttrPluginSHA256)), 64)
			assert.NotContains(t, string(rc.rawBytes()), traceMarker)
		})
	}
}

// TestTracingWithoutTraceparent: a check without one starts a trace; a
// malformed one is ignored the same way.
func TestTracingWithoutTraceparent(t *testing.T) {
	rc, url := httpReceiver(t, http.StatusOK)
	ts := startServe(t, writeServeConfig(t, t.TempDir(), serveParams{
		limits: fmt.Sprintf("tracing: {exporter: otlp-http, endpoint: %q, headers: {x-collector-key: t0ken}}\n", url)}), nil)
	for _, hdr := range [][]string{nil, {"Traceparent", "00-zz-" + traceMarker + "-01"}} {
		a := ts.do(t, "POST", "/v1/pipelines/admission/check", markedSubject(), hdr...)
		require.Equal(t, http.StatusOK, a.status, string(a.body))
		assert.NotEmpty(t, a.header.Get("Traceresponse"))
	}
	require.NoError(t, ts.stop(t))
	byName, _ := rc.spans()
	require.Len(t, byName[host.SpanDecision], 2)
	for _, ds := range byName[host.SpanDecision] {
		assert.Empty(t, ds.ParentSpanId)
	}
	assert.NotContains(t, string(rc.rawBytes()), traceMarker)
}

// TestTracingOffNoHeader: without a tracing: section nothing is traced
// and the answer names no span, whatever the caller sends.
func TestTracingOffNoHeader(t *testing.T) {
	ts := startServe(t, writeServeConfig(t, t.TempDir(), serveParams{}), nil)
	a := ts.do(t, "POST", "/v1/pipelines/admission/check", markedSubject(),
		"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	require.Equal(t, http.StatusOK, a.status)
	assert.Empty(t, a.header.Get("Traceresponse"))
	assert.Nil(t, ts.s.tracer)
}

// TestTracingCollectorFailing: a collector that refuses (500), hangs or is
// down never fails a decision, and the flush at exit ends (tracing.timeout
// bounds it); the lost spans are logged.
func TestTracingCollectorFailing(t *testing.T) {
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body: only then does the server see the client go.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(hang) }) // runs first: no handler outlives the test
	down, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	downAddr := down.Addr().String()
	require.NoError(t, down.Close())
	_, refusing := httpReceiver(t, http.StatusInternalServerError)
	for _, tc := range []struct{ name, section string }{
		{"500", fmt.Sprintf("tracing: {exporter: otlp-http, endpoint: %q, headers: {x-collector-key: t0ken}, timeout: 300ms}\n", refusing)},
		{"hanging", fmt.Sprintf("tracing: {exporter: otlp-http, endpoint: %q, timeout: 300ms}\n", hanging.URL)},
		{"http down", fmt.Sprintf("tracing: {exporter: otlp-http, endpoint: %q, insecure: true, timeout: 300ms}\n", downAddr)},
		{"grpc down", fmt.Sprintf("tracing: {exporter: otlp-grpc, endpoint: %q, insecure: true, timeout: 300ms}\n", downAddr)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServe(t, writeServeConfig(t, t.TempDir(), serveParams{limits: tc.section}), nil)
			for range 3 {
				a := ts.do(t, "POST", "/v1/pipelines/admission/check", markedSubject())
				require.Equal(t, http.StatusOK, a.status, string(a.body))
				assert.Equal(t, abi.Accepted, a.decision(t).Verdict)
			}
			stopped := make(chan error, 1)
			go func() { stopped <- ts.stop(t) }()
			select {
			case err := <-stopped:
				require.NoError(t, err, "a collector's failure is not the server's")
			case <-time.After(2 * time.Minute): // a hang guard, not a timing assertion
				t.Fatal("shutdown did not end")
			}
			assert.Regexp(t, "tracing: spans (not exported|dropped at exit)", ts.logs.String())
			assert.NotContains(t, ts.logs.String(), traceMarker)
		})
	}
}
