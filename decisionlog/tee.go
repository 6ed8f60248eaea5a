package decisionlog

import "github.com/gatehost/gatehost/host/eventlog"

// Tee returns an Appender that appends to appender and, once an append
// succeeded, offers the completed records to exp. The append's result is
// appender's, whatever the export does: Offer never blocks and never
// fails, so export never delays or fails a decision. Nest Tee for several
// exporters.
func Tee(appender eventlog.Appender, exp *Exporter) eventlog.Appender {
	return tee{appender, exp}
}

type tee struct {
	eventlog.Appender
	exp *Exporter
}

func (t tee) Append(recs ...eventlog.Record) ([]eventlog.Record, error) {
	out, err := t.Appender.Append(recs...)
	if err == nil {
		t.exp.Offer(out...)
	}
	return out, err
}
