package abi

import (
	"fmt"
	"time"
)

// Capability operations of the counters capability (SPEC.md §7.14). The
// host counts the tool calls it accepted, per agent session and per
// principal, over the windows its operator configured; gates only read the
// counts. A rejected or inconclusive call is never counted.
const (
	// OpCountersGet: request {} (an empty object); answer CountersGetAnswer
	// about the run's own session (Context.Session) and principal
	// (Context.Principal), as read once when the run started. A gate can
	// read no other session's or principal's counts.
	OpCountersGet = "counters.get"
)

// CountersGetRequest is the request of OpCountersGet. It has no fields.
type CountersGetRequest struct{}

// CountersGetAnswer is the answer of OpCountersGet. Each map of calls is
// keyed by canonical tool id and names every tool of the run's pinned
// catalog snapshot (0 for a tool not called), and the tools called that the
// snapshot no longer holds.
type CountersGetAnswer struct {
	// Session is the run's session id; "" when the run has none (its
	// session counts are then all 0).
	Session string `json:"session"`
	// Calls counts the accepted calls of the session, per tool, since the
	// session's first.
	Calls map[string]int64 `json:"calls"`
	// Windows counts the session's accepted calls per tool within each
	// configured window ending at the run's clock, keyed by WindowName.
	Windows map[string]CounterWindow `json:"windows"`
	// Principal counts the run principal's accepted calls, across its
	// sessions, within each configured window, keyed by WindowName; all 0
	// for an anonymous run.
	Principal map[string]CounterWindow `json:"principal"`
}

// CounterWindow is the counts of one window.
type CounterWindow struct {
	// Calls counts accepted calls per canonical tool id.
	Calls map[string]int64 `json:"calls"`
}

// MaxCounterWindow is the longest window a host counts over.
const MaxCounterWindow = 31 * 24 * time.Hour

// WindowName is the name of a counting window of d: a whole number of days
// ("1d"), hours ("1h", "36h" is "36h"), minutes ("1m") or seconds ("30s"),
// the largest unit that divides d. d must be a whole number of seconds
// between 1s and MaxCounterWindow (ValidWindow).
func WindowName(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// ParseWindow parses a window as Go's time.ParseDuration does, with "d"
// for 24 hours ("1d", "7d"), and checks it with ValidWindow.
func ParseWindow(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if n, ok := cutDays(s); ok {
		d = time.Duration(n) * 24 * time.Hour
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("window %q: %w", s, err)
	}
	if err := ValidWindow(d); err != nil {
		return 0, fmt.Errorf("window %q: %w", s, err)
	}
	return d, nil
}

func cutDays(s string) (int64, bool) {
	if len(s) < 2 || len(s) > 4 || s[len(s)-1] != 'd' {
		return 0, false
	}
	var n int64
	for _, c := range s[:len(s)-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// ValidWindow checks a counting window: a whole number of seconds, at
// least one, at most MaxCounterWindow.
func ValidWindow(d time.Duration) error {
	switch {
	case d < time.Second:
		return fmt.Errorf("a window is at least 1s")
	case d > MaxCounterWindow:
		return fmt.Errorf("a window is at most %s", WindowName(MaxCounterWindow))
	case d%time.Second != 0:
		return fmt.Errorf("a window is a whole number of seconds")
	}
	return nil
}
