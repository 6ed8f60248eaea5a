package decisionlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gatehost/gatehost/host/eventlog"
)

// Event is one exported decision: the OPA-shaped JSON of a decision record
// (see the package doc) and what a Sink needs of it without decoding.
type Event struct {
	Seq      uint64
	Hash     string
	RunID    string
	Pipeline string
	Verdict  string
	Time     time.Time
	// JSON is the event, masked: one element of the array an HTTPSink
	// posts, the body of an OTLP log record.
	JSON []byte
}

// wireEvent is the JSON of an Event, members in this order.
type wireEvent struct {
	Labels     map[string]string `json:"labels"`
	DecisionID string            `json:"decision_id"`
	Path       string            `json:"path"`
	Input      json.RawMessage   `json:"input,omitempty"`
	Result     wireResult        `json:"result"`
	Timestamp  string            `json:"timestamp"`
	RequestID  string            `json:"request_id,omitempty"`
	Seq        uint64            `json:"seq"`
	Hash       string            `json:"hash"`
	Prev       string            `json:"prev"`
	Chain      string            `json:"chain"`
}

type wireResult struct {
	Verdict       string          `json:"verdict"`
	Reason        string          `json:"reason,omitempty"`
	Findings      json.RawMessage `json:"findings"`
	FindingsTotal json.RawMessage `json:"findings_total,omitempty"`
}

// encoder turns decision records into Events. It is used by one goroutine.
type encoder struct {
	labels map[string]string
	chain  string
	masks  []Pointer
	// run is the stage records seen of the run in progress: a run's
	// records are contiguous on the chain, stages first, its decision last.
	run struct {
		id     string
		reason string
	}
}

// stage notes what a stage record of the run in progress says: the reason
// of the first enforcing stage that was inconclusive, which is the reason
// of an inconclusive decision.
func (e *encoder) stage(r *eventlog.Record) {
	if r.RunID != e.run.id {
		e.run.id, e.run.reason = r.RunID, ""
	}
	if e.run.reason != "" || r.Verdict != "inconclusive" || r.Reason == "" {
		return
	}
	var s struct {
		Mode string `json:"mode"`
	}
	if json.Unmarshal(r.Data, &s) == nil && s.Mode == "advisory" {
		return // an advisory stage decides nothing
	}
	e.run.reason = r.Reason
}

// decision encodes a decision record. Its data's findings (and
// findings_total) become the result's; everything else in it (subject
// digest, session, catalog generation, principal, ...) is the input.
func (e *encoder) decision(r *eventlog.Record) (Event, error) {
	w := wireEvent{
		Labels: e.labels, DecisionID: r.RunID, Path: "gatehost/" + r.Pipeline,
		Result:    wireResult{Verdict: r.Verdict, Reason: r.Reason, Findings: json.RawMessage("[]")},
		Timestamp: r.Time.UTC().Format(time.RFC3339Nano), RequestID: r.RequestID,
		Seq: r.Seq, Hash: r.Hash, Prev: r.Prev, Chain: e.chain,
	}
	if w.Result.Reason == "" && r.Verdict == "inconclusive" && e.run.id == r.RunID {
		w.Result.Reason = e.run.reason
	}
	e.run.id, e.run.reason = "", ""
	var members map[string]json.RawMessage
	if len(r.Data) > 0 && json.Unmarshal(r.Data, &members) == nil && members != nil {
		if f, ok := members["findings"]; ok && !bytes.Equal(f, []byte("null")) {
			w.Result.Findings = f
		}
		w.Result.FindingsTotal = members["findings_total"]
		delete(members, "findings")
		delete(members, "findings_total")
		if len(members) > 0 {
			in, err := marshal(members)
			if err != nil {
				return Event{}, err
			}
			w.Input = in
		}
	} else if len(r.Data) > 0 {
		w.Input = r.Data // not an object: kept whole
	}
	b, err := marshal(w)
	if err != nil {
		return Event{}, fmt.Errorf("decisionlog: encode seq %d: %w", r.Seq, err)
	}
	if len(e.masks) > 0 {
		if b, err = e.mask(b); err != nil {
			return Event{}, fmt.Errorf("decisionlog: mask seq %d: %w", r.Seq, err)
		}
	}
	return Event{Seq: r.Seq, Hash: r.Hash, RunID: r.RunID, Pipeline: r.Pipeline, Verdict: r.Verdict, Time: r.Time, JSON: b}, nil
}

// mask replaces every value a mask points to and lists the pointers that
// matched in the event's "erased" member. Numbers are kept as written.
func (e *encoder) mask(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var erased []string
	for _, p := range e.masks {
		if p.apply(doc) {
			erased = append(erased, p.String())
		}
	}
	if len(erased) == 0 {
		return b, nil
	}
	doc["erased"] = erased
	return marshal(doc)
}

// marshal is json.Marshal without HTML escaping: the text of a finding is
// exported as the log holds it.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
