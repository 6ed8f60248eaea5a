package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go/types"

	"github.com/gatehost/gatehost/abi"
)

// CodeCountersUnavailable is the finding code of a call whose policies
// name context.session when the counters are unavailable: the counters
// capability was not granted or failed, or its answer lacks a declared
// window. The call is inconclusive.
const CodeCountersUnavailable = "counters_unavailable"

// Counts are the counts of the run's session and principal, as the
// counters capability answers them (abi.CountersGetAnswer).
type Counts = abi.CountersGetAnswer

// windowNames checks and canonicalises the declared windows ("1h", "60m"
// and "3600s" are one window, "1h").
func windowNames(ws []string) ([]string, error) {
	var out []string
	for _, w := range ws {
		d, err := abi.ParseWindow(w)
		if err != nil {
			return nil, err
		}
		n := abi.WindowName(d)
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// writeSessionTypes writes the schema's session types: Calls holds every
// catalog tool id as a Long; Session the session's counts, per window and
// per principal window.
func writeSessionTypes(b *strings.Builder, ids []string, windows []string) {
	writeRecordType(b, "Calls", ids, "Long")
	b.WriteString("type Window = {\n  calls: Calls\n};\n\n")
	writeRecordType(b, "Windows", windows, "Window")
	b.WriteString("type Session = {\n  calls: Calls,\n  window: Windows,\n  principal: {\n    window: Windows\n  }\n};\n\n")
}

// writeRecordType declares type name, a record of the quoted attrs, each
// of type typ.
func writeRecordType(b *strings.Builder, name string, attrs []string, typ string) {
	fmt.Fprintf(b, "type %s = {", name)
	for i, a := range attrs {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "\n  %s: %s", quote(a), typ)
	}
	if len(attrs) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("};\n\n")
}

// sessionValue is context.session for counts c under the declared
// windows; a declared window c lacks is an error.
func sessionValue(c *Counts, windows []string) (types.Record, error) {
	calls := func(m map[string]int64) types.Record {
		rm := make(types.RecordMap, len(m))
		for k, v := range m {
			rm[types.String(k)] = types.Long(v)
		}
		return types.NewRecord(rm)
	}
	win := func(m map[string]abi.CounterWindow) (types.Record, error) {
		rm := types.RecordMap{}
		for _, w := range windows {
			cw, ok := m[w]
			if !ok {
				return types.Record{}, &RequestError{Code: CodeCountersUnavailable,
					Err: fmt.Errorf("counters: the host does not count window %s", w)}
			}
			rm[types.String(w)] = types.NewRecord(types.RecordMap{"calls": calls(cw.Calls)})
		}
		return types.NewRecord(rm), nil
	}
	sw, err := win(c.Windows)
	if err != nil {
		return types.Record{}, err
	}
	pw, err := win(c.Principal)
	if err != nil {
		return types.Record{}, err
	}
	return types.NewRecord(types.RecordMap{
		"calls":     calls(c.Calls),
		"window":    sw,
		"principal": types.NewRecord(types.RecordMap{"window": pw}),
	}), nil
}
