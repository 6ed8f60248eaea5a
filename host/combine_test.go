package host_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
)

// referenceVerdict restates abi/SPEC.md §9.4 independently of Combine: count, then
// decide by precedence.
func referenceVerdict(stages []host.StageResult) abi.Verdict {
	counts := map[abi.Verdict]int{}
	enforcing := 0
	for _, s := range stages {
		if s.Mode == host.Enforce && !s.Skipped {
			enforcing++
			counts[s.Verdict]++
		}
	}
	if counts[abi.Rejected] > 0 {
		return abi.Rejected
	}
	if enforcing > 0 && counts[abi.Accepted] == enforcing {
		return abi.Accepted
	}
	return abi.Inconclusive
}

// TestCombineExhaustive covers every pipeline of up to four stages over every
// (mode, outcome) pair, including skipped stages and a verdict string outside
// the ABI.
func TestCombineExhaustive(t *testing.T) {
	outcomes := []host.StageResult{}
	for _, m := range []host.Mode{host.Enforce, host.Advisory} {
		for _, v := range []abi.Verdict{abi.Accepted, abi.Rejected, abi.Inconclusive, "maybe"} {
			outcomes = append(outcomes, host.StageResult{Mode: m, Verdict: v})
		}
		outcomes = append(outcomes, host.StageResult{Mode: m, Skipped: true})
	}
	var walk func(prefix []host.StageResult, depth int)
	n := 0
	walk = func(prefix []host.StageResult, depth int) {
		got, want := host.Combine(prefix), referenceVerdict(prefix)
		if !assert.Equal(t, want, got, "stages %s", describe(prefix)) {
			return
		}
		n++
		if depth == 4 {
			return
		}
		for _, o := range outcomes {
			walk(append(prefix[:len(prefix):len(prefix)], o), depth+1)
		}
	}
	walk(nil, 0)
	assert.Equal(t, 1+10+100+1000+10000, n)
}

func TestCombineCases(t *testing.T) {
	e := func(v abi.Verdict) host.StageResult { return host.StageResult{Mode: host.Enforce, Verdict: v} }
	a := func(v abi.Verdict) host.StageResult { return host.StageResult{Mode: host.Advisory, Verdict: v} }
	tests := []struct {
		name   string
		stages []host.StageResult
		want   abi.Verdict
	}{
		{"no stage ran", nil, abi.Inconclusive},
		{"advisory accept alone never accepts", []host.StageResult{a(abi.Accepted)}, abi.Inconclusive},
		{"advisory reject never rejects", []host.StageResult{e(abi.Accepted), a(abi.Rejected)}, abi.Accepted},
		{"reject beats inconclusive", []host.StageResult{e(abi.Inconclusive), e(abi.Rejected)}, abi.Rejected},
		{"inconclusive beats accept", []host.StageResult{e(abi.Accepted), e(abi.Inconclusive)}, abi.Inconclusive},
		{"unknown verdict is inconclusive", []host.StageResult{e(abi.Accepted), e("yes")}, abi.Inconclusive},
		{"all accept", []host.StageResult{e(abi.Accepted), e(abi.Accepted)}, abi.Accepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, host.Combine(tt.stages)) })
	}
}

func describe(stages []host.StageResult) string {
	s := ""
	for _, st := range stages {
		v := string(st.Verdict)
		if st.Skipped {
			v = "skipped"
		}
		s += fmt.Sprintf("[%s %s]", st.Mode, v)
	}
	return s
}
