// Package decisionlog exports gatehost's decision records to a decision-log
// receiver: an OPA decision-log service over HTTP (HTTPSink) or an
// OpenTelemetry collector over OTLP/HTTP logs (OTLPSink).
//
// The local event log (host/eventlog) stays the source of truth. Export
// never blocks or fails a decision: Tee offers the records of each
// successful append to an Exporter, whose Offer never blocks; whatever the
// export does with them, the records are already durable in the log.
//
// # Event shape
//
// Each decision record (kind "decision") becomes one event, OPA's
// decision-log shape with gatehost's chain members added:
//
//	{"labels":{"id":"node-1","version":"v1.2.0"},
//	 "decision_id":"<run_id>", "path":"gatehost/<pipeline>",
//	 "input":{"subject_sha256":"…","session":"…","catalog_generation":3},
//	 "result":{"verdict":"rejected","reason":"…","findings":[…],"findings_total":N},
//	 "timestamp":"2025-01-02T03:04:05.06Z", "request_id":"…",
//	 "erased":["/result/findings/0/evidence"],
//	 "seq":42, "hash":"<64 hex>", "prev":"<64 hex>", "chain":"node-1"}
//
// input is the decision record's data without its findings: what the
// decision was made on, by digest (gatehost never logs a subject). The
// reason of an inconclusive decision is that of its first enforcing stage
// that was inconclusive. erased lists the Options.Mask pointers that
// matched; their values are replaced with Masked. seq and hash are the
// record's on the chain named by chain: the copy can be checked against
// the local log with
//
//	gatehost log verify --anchor <hash>
//
// which verifies the chain and that the record with that hash is on it, so
// a log rewritten after the export is caught (see eventlog's package doc).
//
// # Delivery
//
// At least once, in seq order, deduplicated by the receiver on (chain,
// seq). One goroutine batches events (at most Options.MaxBatchEvents and
// Options.MaxBatchBytes of JSON; a larger event alone), sends each batch,
// and retries a failed one with exponential backoff and jitter, each
// attempt bounded by Options.Timeout, until it is acknowledged (2xx).
// Only then does the cursor — the last acknowledged seq and hash, in a
// file written atomically and fsynced — advance. A batch sent but not
// acknowledged (a timeout, a crash before the cursor was written) is sent
// again: that is the only source of duplicates.
//
// Nothing is lost while the local log is there: when the bounded buffer
// is full, Offer drops the record (counted, Stats.Dropped[DropBufferFull],
// and warned about, rate-limited) and the sender reads the missing records
// back from the log (eventlog.ReadAfter, verifying the chain) before it
// goes on. A new Exporter resumes from its cursor the same way, after
// checking that the cursor's record is on the log with the cursor's hash
// (ErrCursorMismatch otherwise). A receiver that rejects content for good
// (HTTP 400, 413, 422) gets the batch split in halves, and a single event
// it rejects is dropped, counted (DropRejected) and logged with its seq and
// hash; every other failure is retried for as long as it lasts.
//
// # OTLP
//
// OTLPSink feeds the same Exporter, so it has the same guarantees: it
// drives the OTLP exporter synchronously, with no batch processor (which
// would drop records when its queue overflows, unseen). What differs: the
// OTLP exporter does not tell a permanent failure from a passing one, so
// every failure is retried (a collector that refuses a record for good
// stalls the export, counted in Stats.Failures; the log keeps everything);
// and a collector's partial success (some records rejected within a 2xx)
// is acknowledged as a whole.
package decisionlog
