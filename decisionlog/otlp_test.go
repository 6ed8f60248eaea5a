package decisionlog

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logpb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP logs receiver that fails its first answers.
type collector struct {
	mu      sync.Mutex
	records []*logpb.LogRecord
	service string
	fail    atomic.Int32
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.fail.Add(-1) >= 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/logs" || r.Header.Get("X-Api-Key") != "k" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var req collogpb.ExportLogsServiceRequest
	if proto.Unmarshal(b, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rl := range req.ResourceLogs {
		for _, a := range rl.GetResource().GetAttributes() {
			if a.Key == "service.instance.id" {
				c.service = a.GetValue().GetStringValue()
			}
		}
		for _, sl := range rl.ScopeLogs {
			c.records = append(c.records, sl.LogRecords...)
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collogpb.ExportLogsServiceResponse{})
	_, _ = w.Write(out)
}

func (c *collector) got() []*logpb.LogRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*logpb.LogRecord(nil), c.records...)
}

func TestOTLPSink(t *testing.T) {
	f := newFixture(t)
	col := &collector{}
	col.fail.Store(2)
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	sink, err := NewOTLPSink(t.Context(), OTLPOptions{Endpoint: srv.URL + "/v1/logs", Headers: map[string]string{"X-Api-Key": "k"}, ServiceInstance: "node-1"})
	require.NoError(t, err)
	o := f.options(sink)
	o.Mask = []string{"/result/findings/0/evidence"}
	e := newExporter(t, o)
	app := Tee(f.log, e)
	var want []uint64
	for range 4 {
		recs := f.run(t, app)
		want = append(want, recs[1].Seq)
	}
	waitFor(t, "every decision acknowledged", func() bool { return e.Stats().Exported == 4 })
	got := col.got()
	require.Len(t, got, 4, "503s are retried, nothing twice")
	assert.GreaterOrEqual(t, e.Stats().Failures, uint64(2))
	assert.Equal(t, "node-1", col.service)
	for i, lr := range got {
		attrs := map[string]any{}
		for _, a := range lr.Attributes {
			if v, ok := a.Value.Value.(*commonpb.AnyValue_StringValue); ok {
				attrs[a.Key] = v.StringValue
			} else {
				attrs[a.Key] = a.Value.GetIntValue()
			}
		}
		assert.Equal(t, int64(want[i]), attrs["seq"])
		assert.Equal(t, "plan", attrs["pipeline"])
		assert.NotEmpty(t, attrs["hash"])
		assert.NotEmpty(t, attrs["run_id"])
		assert.Contains(t, []any{"rejected", "inconclusive"}, attrs["verdict"])
		assert.Equal(t, "gatehost.decision", lr.EventName)
		var ev opaEvent
		require.NoError(t, json.Unmarshal([]byte(lr.Body.GetStringValue()), &ev))
		assert.Equal(t, want[i], ev.Seq)
		assert.Equal(t, attrs["hash"], ev.Hash)
		assert.Equal(t, Masked, ev.Result.Findings[0]["evidence"], "the body is masked")
		assert.Equal(t, []string{"/result/findings/0/evidence"}, ev.Erased)
	}
}

func TestOTLPSinkOptions(t *testing.T) {
	for _, o := range []OTLPOptions{{}, {Endpoint: "https://c:4318", Insecure: true}, {Endpoint: "ftp://c"}} {
		_, err := NewOTLPSink(t.Context(), o)
		require.Error(t, err, "%+v", o)
	}
	for _, o := range []OTLPOptions{{Endpoint: "c:4318", Insecure: true}, {Endpoint: "http://c:4318"}} {
		s, err := NewOTLPSink(t.Context(), o)
		require.NoError(t, err, "%+v", o)
		require.NoError(t, s.Close(t.Context()))
	}
}
