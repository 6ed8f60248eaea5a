package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// traceMarker is put in subjects' ids and arguments: no span may carry it.
const traceMarker = "TRACE-MARKER-7f3a"

// markedProposal calls tool with the marker in its arguments.
func markedProposal(id, tool string) []byte {
	return []byte(`{"id":"` + id + `","actions":[{"id":"a1","tool":"` + tool + `","parameters":{"body":"` + traceMarker + `"}}]}`)
}

// tracedHost is a host whose spans go to the returned recorder. Pipelines:
// "two" (flaky enforcing, flaky advisory) and "stop" (static-verify
// enforcing, stop on reject, then flaky).
func tracedHost(t *testing.T, opts ...sdktrace.TracerProviderOption) (*host.Host, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}, opts...)...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"flaky": {Path: flakyWasm}, "static-verify": {Path: staticVerifyWasm}},
		Catalog: hosttest.GitHubCatalog(t),
		Pipelines: map[string]host.PipelineConfig{
			"two": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{
				{Name: "a", Plugin: "flaky"}, {Name: "b", Plugin: "flaky", Mode: host.Advisory}}},
			"stop": {Subject: abi.SubjectProposal, StopOnReject: true, Stages: []host.StageConfig{
				{Name: "sv", Plugin: "static-verify", Capabilities: []string{"catalog", "schema"}}, {Name: "after", Plugin: "flaky"}}},
		},
		TracerProvider: tp,
	})
	return h, rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// byName splits the ended spans into the decision spans and stage spans.
func byName(t *testing.T, rec *tracetest.SpanRecorder) (decisions, stages []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range rec.Ended() {
		switch s.Name() {
		case host.SpanDecision:
			decisions = append(decisions, s)
		case host.SpanStage:
			stages = append(stages, s)
		default:
			t.Fatalf("unexpected span %q", s.Name())
		}
	}
	return decisions, stages
}

// assertNoMarker scans every string a span exports.
func assertNoMarker(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range spans {
		texts := []string{s.Name(), s.Status().Description, s.SpanContext().TraceState().String()}
		for _, kv := range s.Attributes() {
			texts = append(texts, string(kv.Key), kv.Value.Emit())
		}
		for _, e := range s.Events() {
			texts = append(texts, e.Name)
			for _, kv := range e.Attributes {
				texts = append(texts, kv.Value.Emit())
			}
		}
		for _, x := range texts {
			assert.NotContains(t, x, traceMarker, "span %s", s.Name())
		}
	}
}

func TestTracingDecisionAndStages(t *testing.T) {
	h, rec := tracedHost(t)
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	d, err := h.Check(ctx, "two", markedProposal(traceMarker, "get_me"), host.RunOptions{Session: "s-1", RequestID: "req-1"})
	require.NoError(t, err)
	require.Equal(t, abi.Accepted, d.Verdict)

	decisions, stages := byName(t, rec)
	require.Len(t, decisions, 1)
	require.Len(t, stages, 2)
	ds := decisions[0]
	assert.Equal(t, parent.TraceID(), ds.SpanContext().TraceID(), "the caller's trace continues")
	assert.Equal(t, parent.SpanID(), ds.Parent().SpanID(), "the caller's span is the decision's parent")
	assert.Equal(t, ds.SpanContext(), d.SpanContext())
	da := attrs(ds)
	assert.Equal(t, "two", da[host.AttrPipeline].AsString())
	assert.Equal(t, d.RunID, da[host.AttrRunID].AsString())
	assert.Equal(t, "accepted", da[host.AttrVerdict].AsString())
	assert.Equal(t, int64(d.CatalogGeneration), da[host.AttrCatalogGeneration].AsInt64())
	assert.Equal(t, "s-1", da[host.AttrSession].AsString())
	assert.Equal(t, "req-1", da[host.AttrRequestID].AsString())
	assert.Equal(t, otelcodes.Unset, ds.Status().Code)

	for i, ss := range stages {
		assert.Equal(t, ds.SpanContext().SpanID(), ss.Parent().SpanID(), "stage %d is a child of the decision", i)
		assert.Equal(t, ds.SpanContext().TraceID(), ss.SpanContext().TraceID())
		a := attrs(ss)
		r := d.Stages[i]
		assert.Equal(t, r.Name, a[host.AttrStage].AsString())
		assert.Equal(t, "two", a[host.AttrPipeline].AsString())
		assert.Equal(t, "flaky", a[host.AttrPlugin].AsString())
		assert.Regexp(t, `^[0-9a-f]{64}$`, a[host.AttrPluginSHA256].AsString())
		assert.Equal(t, string(r.Mode), a[host.AttrMode].AsString())
		assert.Equal(t, "accepted", a[host.AttrVerdict].AsString())
		assert.Equal(t, d.RunID, a[host.AttrRunID].AsString())
		assert.Equal(t, r.DurationMicros, a[host.AttrDurationMicros].AsInt64())
		assert.Equal(t, otelcodes.Unset, ss.Status().Code)
	}
	assert.Equal(t, []string{"a", "b"}, []string{attrs(stages[0])[host.AttrStage].AsString(), attrs(stages[1])[host.AttrStage].AsString()})
	assert.Equal(t, "advisory", attrs(stages[1])[host.AttrMode].AsString())
	assertNoMarker(t, rec.Ended())
}

// TestTracingNewTrace: without a span in the context the decision starts
// a trace of its own.
func TestTracingNewTrace(t *testing.T) {
	h, rec := tracedHost(t)
	d, err := h.Check(context.Background(), "two", markedProposal("p", "get_me"), host.RunOptions{})
	require.NoError(t, err)
	decisions, _ := byName(t, rec)
	require.Len(t, decisions, 1)
	assert.False(t, decisions[0].Parent().IsValid())
	assert.True(t, d.SpanContext().IsSampled())
	_, hasSession := attrs(decisions[0])[host.AttrSession]
	assert.False(t, hasSession, "no session, no attribute")
}

func TestTracingStopOnRejectSkippedStage(t *testing.T) {
	h, rec := tracedHost(t)
	d, err := h.Check(context.Background(), "stop", markedProposal(traceMarker, "no_such_tool_"+traceMarker), host.RunOptions{})
	require.NoError(t, err)
	require.Equal(t, abi.Rejected, d.Verdict)
	require.True(t, d.Stages[1].Skipped)
	decisions, stages := byName(t, rec)
	require.Len(t, decisions, 1)
	require.Len(t, stages, 2, "a skipped stage has a span too")
	assert.Equal(t, "rejected", attrs(decisions[0])[host.AttrVerdict].AsString())
	assert.Equal(t, otelcodes.Unset, decisions[0].Status().Code, "a rejection is a decision, not a failure")
	assert.Equal(t, "rejected", attrs(stages[0])[host.AttrVerdict].AsString())
	a := attrs(stages[1])
	assert.Equal(t, "after", a[host.AttrStage].AsString())
	assert.True(t, a[host.AttrSkipped].AsBool())
	assert.Equal(t, decisions[0].SpanContext().SpanID(), stages[1].Parent().SpanID())
	assertNoMarker(t, rec.Ended())
}

// TestTracingHostFailure: a stage the host decided inconclusive (a trap)
// is an error on its span and on the decision's, with the reason code.
func TestTracingHostFailure(t *testing.T) {
	h, rec := tracedHost(t)
	d, err := h.Check(context.Background(), "two", []byte(`{"id":"crash","actions":[{"tool":"get_me","parameters":{"x":"`+traceMarker+`"}}]}`), host.RunOptions{})
	require.NoError(t, err)
	require.Equal(t, abi.Inconclusive, d.Verdict)
	decisions, stages := byName(t, rec)
	require.Len(t, decisions, 1)
	require.Len(t, stages, 2)
	assert.Equal(t, otelcodes.Error, decisions[0].Status().Code)
	assert.Equal(t, abi.ReasonPluginTrap, decisions[0].Status().Description)
	assert.Equal(t, abi.ReasonPluginTrap, attrs(decisions[0])[host.AttrErrorType].AsString())
	for _, ss := range stages {
		assert.Equal(t, otelcodes.Error, ss.Status().Code)
		assert.Equal(t, abi.ReasonPluginTrap, attrs(ss)[host.AttrReason].AsString())
	}
	// The trap's stderr (evidence) never reaches a span.
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.Emit(), "crash requested")
		}
	}
	assertNoMarker(t, rec.Ended())
}

// TestTracingRefusedInput: a Check that returns no Decision still ends its
// span, an error naming the class of the refusal, never the input.
func TestTracingRefusedInput(t *testing.T) {
	h, rec := tracedHost(t)
	for _, tc := range []struct {
		pipeline, input, class string
	}{
		{"two", `{"actions":[{"type":"launch","tool":"` + traceMarker + `"}]}`, "invalid_subject"},
		{"nope-" + traceMarker, `{"actions":[]}`, "unknown_pipeline"},
	} {
		d, err := h.Check(context.Background(), tc.pipeline, []byte(tc.input), host.RunOptions{})
		require.Error(t, err)
		require.Nil(t, d)
		spans := rec.Ended()
		last := spans[len(spans)-1]
		assert.Equal(t, host.SpanDecision, last.Name())
		assert.Equal(t, otelcodes.Error, last.Status().Code)
		assert.Equal(t, tc.class, last.Status().Description)
	}
	_, stages := byName(t, rec)
	assert.Empty(t, stages)
	assertNoMarker(t, rec.Ended())
}

// TestTracingSampledOut: an unsampled decision records nothing, and its
// span context still says so to what follows.
func TestTracingSampledOut(t *testing.T) {
	h, rec := tracedHost(t, sdktrace.WithSampler(sdktrace.NeverSample()))
	d, err := h.Check(context.Background(), "two", markedProposal("p", "get_me"), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Verdict)
	assert.Empty(t, rec.Ended())
	assert.True(t, d.SpanContext().IsValid())
	assert.False(t, d.SpanContext().IsSampled())
}

func TestTracingOff(t *testing.T) {
	h := hosttest.New(t, host.Config{Plugins: map[string]host.PluginConfig{"flaky": {Path: flakyWasm}}, Pipelines: hosttest.OnePipeline("flaky")})
	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	assert.False(t, d.SpanContext().IsValid())
	assert.Nil(t, h.TracerProvider())
	b, err := json.Marshal(d)
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(b), "span"), "the span context is not part of the Decision's JSON")
}
