package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuarantineTimeline plays the crash-loop quarantine's timeline on a fake
// clock: N faults in the window quarantine; the backoff doubles on failed
// probes up to its cap; a healthy probe lifts it; faults spread wider than
// the window never trip it.
func TestQuarantineTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	b := newQuarantine(QuarantineConfig{Failures: 3, Window: 10 * time.Second, Backoff: time.Second, MaxBackoff: 4 * time.Second})
	call := func(d time.Duration, o outcome) (bool, *transition) {
		ok, probe, _ := b.admit(at(d))
		if !ok {
			return false, nil
		}
		return true, b.report(at(d), probe, o)
	}
	s := time.Second
	steps := []struct {
		at        time.Duration
		o         outcome
		admitted  bool
		enters    time.Duration // backoff of a quarantine entered, 0 if none
		lifted    bool
		narration string
	}{
		{0, faulty, true, 0, false, "fault 1"},
		{1 * s, healthy, true, 0, false, "successes do not clear the window"},
		{2 * s, faulty, true, 0, false, "fault 2"},
		{3 * s, faulty, true, 1 * s, false, "fault 3 in 10s: quarantined for 1s"},
		{3*s + 500*time.Millisecond, healthy, false, 0, false, "quarantined: guest not called"},
		{4 * s, faulty, true, 2 * s, false, "probe at 4s faults: backoff doubles to 2s"},
		{5 * s, healthy, false, 0, false, "still quarantined"},
		{6 * s, faulty, true, 4 * s, false, "probe at 6s faults: 4s"},
		{10 * s, faulty, true, 4 * s, false, "probe at 10s faults: capped at 4s"},
		{13 * s, healthy, false, 0, false, "still quarantined until 14s"},
		{14 * s, healthy, true, 0, true, "probe at 14s answers: lifted"},
		{15 * s, faulty, true, 0, false, "fault 1 of a new window"},
		{26 * s, faulty, true, 0, false, "fault at 26s: the 15s one left the window"},
		{30 * s, faulty, true, 0, false, "two in window"},
		{31 * s, faulty, true, 1 * s, false, "three in window (26, 30, 31): quarantined; backoff starts over at 1s"},
		{32 * s, neutral, true, 0, false, "probe canceled: says nothing"},
		{32 * s, healthy, true, 0, true, "next call probes again and lifts"},
	}
	for _, st := range steps {
		admitted, tr := call(st.at, st.o)
		require.Equal(t, st.admitted, admitted, "%v: %s", st.at, st.narration)
		switch {
		case st.enters > 0:
			require.NotNil(t, tr, "%v: %s", st.at, st.narration)
			assert.True(t, tr.quarantined)
			assert.Equal(t, st.enters, tr.backoff, "%v: %s", st.at, st.narration)
			assert.Equal(t, at(st.at+st.enters), tr.until)
		case st.lifted:
			require.NotNil(t, tr, "%v: %s", st.at, st.narration)
			assert.False(t, tr.quarantined)
		default:
			assert.Nil(t, tr, "%v: %s", st.at, st.narration)
		}
		t.Logf("t=%-6v %-8v admitted=%-5v %s", st.at, map[outcome]string{neutral: "neutral", healthy: "healthy", faulty: "fault"}[st.o], admitted, st.narration)
	}
}

// TestQuarantineOneProbe: while the probe is out, other calls stay quarantined.
func TestQuarantineOneProbe(t *testing.T) {
	now := time.Unix(0, 0)
	b := newQuarantine(QuarantineConfig{Failures: 1, Window: time.Minute, Backoff: time.Second, MaxBackoff: time.Second})
	ok, probe, _ := b.admit(now)
	require.True(t, ok)
	b.report(now, probe, faulty)
	now = now.Add(time.Second)
	ok, probe, _ = b.admit(now)
	require.True(t, ok)
	require.True(t, probe)
	ok, _, until := b.admit(now)
	assert.False(t, ok, "a second call during the probe is refused")
	assert.Equal(t, now, until)
	b.report(now, true, healthy)
	ok, probe, _ = b.admit(now)
	assert.True(t, ok)
	assert.False(t, probe)
}

func TestQuarantineDisabled(t *testing.T) {
	b := newQuarantine(QuarantineConfig{Disabled: true, Failures: 1})
	for range 10 {
		ok, _, _ := b.admit(time.Now())
		require.True(t, ok)
		assert.Nil(t, b.report(time.Now(), false, faulty))
	}
}
