package host

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/abi"
)

// Decision is the outcome of one pipeline run.
type Decision struct {
	// Verdict combines the enforcing stages' verdicts (see Combine).
	Verdict  abi.Verdict `json:"verdict"`
	RunID    string      `json:"run_id"`
	Pipeline string      `json:"pipeline"`
	// RequestID is the caller's id for the run, if given.
	RequestID string `json:"request_id,omitempty"`
	// CatalogGeneration is the generation of the catalog snapshot every
	// stage of the run saw.
	CatalogGeneration uint64 `json:"catalog_generation"`
	// CatalogDigest names that snapshot by its content
	// (catalog.Snapshot.Digest): unlike the generation, the same on every
	// replica that holds the same catalog.
	CatalogDigest string `json:"catalog_digest"`
	// Stages are all stages of the pipeline, in order.
	Stages []StageResult `json:"stages"`
	// Findings are every stage's findings, in stage order, then the
	// host's own (Stage HostStage), such as CodeUndecodableArguments.
	Findings []Finding `json:"findings"`

	span trace.SpanContext // the decision's span; see SpanContext
}

// StageResult is what one stage answered.
type StageResult struct {
	Name   string `json:"name"`
	Plugin string `json:"plugin"`
	Mode   Mode   `json:"mode"`
	// Verdict is empty only when the stage was skipped.
	Verdict abi.Verdict `json:"verdict,omitempty"`
	// Skipped: an earlier enforcing stage rejected and the pipeline stops
	// on reject.
	Skipped bool `json:"skipped,omitempty"`
	// Reason is the snake_case code of an inconclusive verdict: one of
	// abi.Reason* when the host decided it, or the gate's own.
	Reason string `json:"reason,omitempty"`
	Basis  string `json:"basis,omitempty"`
	// Findings and Evidence are the gate's, bounded (see Answer), or the
	// host's when the host decided the stage (abi/SPEC.md §9.3). Numbers a
	// gate wrote are json.Number, in Evidence as in Findings' Details, so
	// that they are recorded exactly as written, whatever their size.
	Findings []abi.Finding  `json:"findings"`
	Evidence map[string]any `json:"evidence,omitempty"`
	// Answer describes the gate's answer as received: its SHA-256 and size,
	// and whether Findings and Evidence keep less than it held. Nil when
	// the gate returned no answer.
	Answer *Answer `json:"answer,omitempty"`
	// DurationMicros is the stage's wall time, waiting for an instance
	// included.
	DurationMicros int64 `json:"duration_us"`

	err *PluginError // set when the host decided the stage; see Err
}

// Finding is a stage's finding, with the stage it came from; Stage is
// HostStage ("") for a finding of the host itself.
type Finding struct {
	abi.Finding
	Stage string `json:"stage"`
	// Advisory marks a finding of an advisory stage: whatever its
	// severity, it did not decide the verdict. A consumer that filters on
	// blocking findings must skip these.
	Advisory bool `json:"advisory,omitempty"`
}

// Combine is the fail-closed verdict of a run's stages (Check then rejects
// a subject it flagged as undecodable whatever Combine says; see
// CodeUndecodableArguments):
//   - any enforcing stage that rejected → rejected;
//   - otherwise any enforcing stage that is inconclusive → inconclusive;
//   - otherwise accepted, if at least one enforcing stage accepted;
//   - otherwise (no enforcing stage ran) → inconclusive.
//
// Advisory and skipped stages never decide. An unknown verdict string counts
// as inconclusive.
func Combine(stages []StageResult) abi.Verdict {
	var rejected, inconclusive, accepted bool
	for _, s := range stages {
		if s.Mode != Enforce || s.Skipped {
			continue
		}
		switch s.Verdict {
		case abi.Rejected:
			rejected = true
		case abi.Accepted:
			accepted = true
		default:
			inconclusive = true
		}
	}
	switch {
	case rejected:
		return abi.Rejected
	case inconclusive || !accepted:
		return abi.Inconclusive
	}
	return abi.Accepted
}

// OnlyConfirmationMissing reports whether d was refused for want of a
// person's confirmation alone: its blocking findings are all
// confirmation_required, and there is at least one. Such a call is what an
// approval can let through; any other blocking finding refuses it
// whatever a person says.
func (d *Decision) OnlyConfirmationMissing() bool {
	n := 0
	for _, f := range d.Findings {
		if f.Advisory || f.Severity != abi.Blocking {
			continue
		}
		if f.Code != abi.CodeConfirmationRequired {
			return false
		}
		n++
	}
	return n > 0
}

// Blocking returns d's blocking findings (those not advisory): why it was
// not accepted, as a person deciding it is shown.
func (d *Decision) Blocking() []abi.Finding {
	var out []abi.Finding
	for _, f := range d.Findings {
		if !f.Advisory {
			out = append(out, f.Finding)
		}
	}
	return out
}
