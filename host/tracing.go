package host

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/abi"
)

// Tracing (docs/IDENTITY-AND-TRACING.md "Tracing"): with
// Config.TracerProvider set, each Check is one span named SpanDecision, a
// child of the span in Check's context (a caller's traceparent, extracted by
// the server), with one child span named SpanStage per stage of the pipeline.
// Spans carry the identifiers and outcomes of the run, never the subject or
// its arguments.
const (
	// SpanDecision is the span of one Check.
	SpanDecision = "gatehost.decision"
	// SpanStage is the span of one stage of a Check; a skipped stage's,
	// or one refused admission, lasts no time.
	SpanStage = "gatehost.stage"
	// TracerName is the instrumentation scope of the host's spans.
	TracerName = "github.com/gatehost/gatehost/host"
)

// Attribute keys of the host's spans.
const (
	AttrPipeline          = attribute.Key("gatehost.pipeline")
	AttrRunID             = attribute.Key("gatehost.run_id")
	AttrVerdict           = attribute.Key("gatehost.verdict")
	AttrCatalogGeneration = attribute.Key("gatehost.catalog_generation")
	AttrSession           = attribute.Key("gatehost.session")
	AttrRequestID         = attribute.Key("gatehost.request_id")
	AttrFindings          = attribute.Key("gatehost.findings")
	AttrStage             = attribute.Key("gatehost.stage")
	AttrPlugin            = attribute.Key("gatehost.plugin")
	AttrPluginSHA256      = attribute.Key("gatehost.plugin.sha256")
	AttrMode              = attribute.Key("gatehost.mode")
	AttrReason            = attribute.Key("gatehost.reason")
	AttrSkipped           = attribute.Key("gatehost.skipped")
	AttrDurationMicros    = attribute.Key("gatehost.duration_us")
	// AttrErrorType is OpenTelemetry's error.type: the class of a Check
	// that returned no Decision, or the host's reason code of a failure.
	AttrErrorType = attribute.Key("error.type")
)

// newTracer is the host's tracer from tp; nil (tracing off) for nil.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(TracerName)
}

// TracerProvider returns Config.TracerProvider: nil when tracing is off.
// A front of the host (the MCP gateway) makes its own spans with it.
func (h *Host) TracerProvider() trace.TracerProvider { return h.cfg.TracerProvider }

// SpanContext is the context of the decision's span, to parent the spans
// of what follows from the decision (a forwarded call) or to answer a
// caller with; invalid when tracing is off.
func (d *Decision) SpanContext() trace.SpanContext { return d.span }

// decisionTrace counts the stages a traced Check ran, which are a prefix
// of the pipeline's: the others were skipped or refused admission.
type decisionTrace struct{ ran int }

type decisionTraceKey struct{}

// tracedCheck is check inside the decision's span.
func (h *Host) tracedCheck(ctx context.Context, pipelineName string, input []byte, opts RunOptions) (*Decision, error) {
	ctx, span := h.tracer.Start(ctx, SpanDecision)
	defer span.End()
	if !span.IsRecording() { // sampled out: nothing to describe
		d, err := h.check(ctx, pipelineName, input, opts)
		if d != nil {
			d.span = span.SpanContext()
		}
		return d, err
	}
	dt := &decisionTrace{}
	d, err := h.check(context.WithValue(ctx, decisionTraceKey{}, dt), pipelineName, input, opts)
	if d == nil {
		span.SetAttributes(AttrErrorType.String(checkErrorClass(err)))
		span.SetStatus(codes.Error, checkErrorClass(err))
		return nil, err
	}
	d.span = span.SpanContext()
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, AttrPipeline.String(d.Pipeline), AttrRunID.String(d.RunID), AttrVerdict.String(string(d.Verdict)),
		AttrCatalogGeneration.Int64(int64(d.CatalogGeneration)), AttrFindings.Int(len(d.Findings)))
	if opts.Session != "" {
		attrs = append(attrs, AttrSession.String(opts.Session))
	}
	if opts.RequestID != "" {
		attrs = append(attrs, AttrRequestID.String(opts.RequestID))
	}
	span.SetAttributes(attrs...)
	if p := h.pipelines[d.Pipeline]; p != nil {
		// Stages that did not run still get a span: the trace shows the
		// whole pipeline and why each stage said nothing.
		for i := dt.ran; i < len(d.Stages) && i < len(p.stages); i++ {
			_, ss := h.tracer.Start(ctx, SpanStage)
			endStageSpan(ss, d.Pipeline, d.RunID, p.stages[i], d.Stages[i])
		}
	}
	switch reason := hostFailure(d); {
	case err != nil:
		span.SetAttributes(AttrErrorType.String(errEventLogFailed))
		span.SetStatus(codes.Error, errEventLogFailed)
	case reason != "":
		span.SetAttributes(AttrErrorType.String(reason))
		span.SetStatus(codes.Error, reason)
	}
	return d, err
}

// errEventLogFailed is the error class of a decision not recorded.
const errEventLogFailed = "event_log_failed"

// tracedStage is runStage inside the stage's span.
func (h *Host) tracedStage(ctx context.Context, rn *run, s *stage) StageResult {
	if h.tracer == nil {
		return h.runStage(ctx, rn, s)
	}
	if dt, ok := ctx.Value(decisionTraceKey{}).(*decisionTrace); ok {
		dt.ran++
	}
	ctx, span := h.tracer.Start(ctx, SpanStage)
	r := h.runStage(ctx, rn, s)
	if span.IsRecording() {
		endStageSpan(span, rn.p.name, rn.id, s, r)
	} else {
		span.End()
	}
	return r
}

// endStageSpan describes stage s's result r on its span, and ends it. A
// stage the host decided (a trap, a timeout, an overload...) is an error.
func endStageSpan(span trace.Span, pipeline, runID string, s *stage, r StageResult) {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, AttrPipeline.String(pipeline), AttrRunID.String(runID), AttrStage.String(r.Name),
		AttrPlugin.String(r.Plugin), AttrPluginSHA256.String(s.plugin.sha256), AttrMode.String(string(r.Mode)),
		AttrDurationMicros.Int64(r.DurationMicros))
	switch {
	case r.Skipped:
		attrs = append(attrs, AttrSkipped.Bool(true))
	default:
		attrs = append(attrs, AttrVerdict.String(string(r.Verdict)))
	}
	if r.Reason != "" {
		attrs = append(attrs, AttrReason.String(r.Reason))
	}
	span.SetAttributes(attrs...)
	if r.Err() != nil {
		span.SetAttributes(AttrErrorType.String(r.Reason))
		span.SetStatus(codes.Error, r.Reason)
	}
	span.End()
}

// hostFailure is the reason of the first enforcing stage the host decided
// inconclusive (a failure, not the gate's judgement) when the decision is
// inconclusive; "" otherwise.
func hostFailure(d *Decision) string {
	if d.Verdict != abi.Inconclusive {
		return ""
	}
	for _, r := range d.Stages {
		if r.Mode == Enforce && r.Err() != nil {
			return r.Reason
		}
	}
	return ""
}

// checkErrorClass names the error of a Check that returned no Decision,
// for a span: never its message, which may quote the input.
func checkErrorClass(err error) string {
	switch {
	case errors.Is(err, ErrClosed):
		return "host_closed"
	case errors.Is(err, ErrUnknownPipeline):
		return "unknown_pipeline"
	case errors.Is(err, ErrBadOptions):
		return "invalid_options"
	case errors.Is(err, ErrBadSubject):
		return "invalid_subject"
	case errors.Is(err, ErrConfirmation):
		return "confirmation_not_resolved"
	}
	return "error"
}
