package eventlog

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headSeq reads the seq the log's head file names now.
func headSeq(t *testing.T, path string) uint64 {
	t.Helper()
	rep, err := Verify(path)
	require.NoError(t, err)
	return rep.HeadSeq
}

// TestHeadInterval: with Options.HeadInterval an Append returns once its
// records are fsynced, the head trails them (the log verifies, ahead of its
// head), and the head catches up in the background or at Close; without
// it, the head names every acknowledged record.
func TestHeadInterval(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		// whether the head names the last record right after Append
		current bool
		// wait for the background checkpoint rather than Close
		background bool
	}{
		{name: "every commit", interval: 0, current: true},
		{name: "trails until close", interval: time.Hour},
		{name: "background checkpoint", interval: time.Millisecond, background: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			var commits, heads int
			l, err := Open(path, Options{Logger: discard(), HeadInterval: tt.interval, OnCommit: func(c Commit) {
				require.NoError(t, c.Err)
				if c.Records > 0 {
					commits++
				}
				if c.Head {
					heads++
				}
			}})
			require.NoError(t, err)
			for i := range 5 {
				_, err := l.Append(sample(i))
				require.NoError(t, err)
			}
			seq, _ := l.Last()
			require.Equal(t, uint64(5), seq, "acknowledged records are durable at once")
			if tt.current {
				assert.Equal(t, uint64(5), headSeq(t, path))
			}
			if !tt.current && !tt.background {
				assert.Zero(t, headSeq(t, path), "the head trails until the interval ends")
				assert.Zero(t, heads, "no commit replaced the head")
			}
			if tt.background {
				// The timer fires 1 ms after a commit; the machine may
				// be slow, so wait for it however long it takes.
				require.Eventually(t, func() bool { return headSeq(t, path) == 5 }, time.Minute, time.Millisecond)
			}
			require.NoError(t, l.Close())
			assert.Equal(t, uint64(5), headSeq(t, path), "the head names the last record after Close")
			assert.Equal(t, 5, commits)
			if tt.current {
				assert.Equal(t, 5, heads)
			} else {
				assert.GreaterOrEqual(t, heads, 1)
				assert.Less(t, heads, 5+1)
			}
		})
	}
}

// TestHeadIntervalCrash: a Log that ends without Close leaves the head
// trailing its acknowledged records; they are all there, the log
// verifies, and Open brings the head up to them.
func TestHeadIntervalCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := Open(path, Options{Logger: discard(), HeadInterval: time.Hour})
	require.NoError(t, err)
	for i := range 3 {
		_, err := l.Append(sample(i))
		require.NoError(t, err)
	}
	// As a crash would: the descriptors go, the head is never written.
	l.headTimer.Stop()
	require.NoError(t, l.f.Close())
	require.NoError(t, l.dir.Close())

	rep, err := Verify(path)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), rep.LastSeq)
	assert.Zero(t, rep.HeadSeq)

	l, err = Open(path, Options{Logger: discard(), HeadInterval: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, uint64(3), headSeq(t, path), "Open catches the head up")
	require.NoError(t, l.Close())
}

// TestHeadIntervalFailedCheckpoint: a head that cannot be replaced breaks
// the Log, as a failed head update in a commit does: later appends are
// refused (fail closed), and Close reports it.
func TestHeadIntervalFailedCheckpoint(t *testing.T) {
	for _, viaClose := range []bool{false, true} {
		name := map[bool]string{false: "background", true: "close"}[viaClose]
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			interval := time.Millisecond
			if viaClose {
				interval = time.Hour
			}
			l, err := Open(path, Options{Logger: discard(), HeadInterval: interval})
			require.NoError(t, err)
			l.mu.Lock()
			l.headPath = filepath.Join(t.TempDir(), "missing", "x.head")
			l.mu.Unlock()
			_, err = l.Append(sample(1))
			require.NoError(t, err, "the records are durable; the head is not on the call's path")
			if viaClose {
				require.ErrorContains(t, l.Close(), "head update")
				return
			}
			require.Eventually(t, func() bool {
				_, err := l.Append(sample(2))
				return err != nil
			}, time.Minute, time.Millisecond)
			_, err = l.Append(sample(3))
			require.ErrorIs(t, err, ErrBroken)
			require.NoError(t, l.Close())
		})
	}
}

// TestHeadIntervalTwoLogs: two Logs of one file, each with a trailing
// head, append in turn; after both close, the head names the chain's last
// record, whichever closed last.
func TestHeadIntervalTwoLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	var logs [2]*Log
	for i := range logs {
		l, err := Open(path, Options{Logger: discard(), HeadInterval: time.Hour})
		require.NoError(t, err)
		logs[i] = l
	}
	for i := range 6 {
		_, err := logs[i%2].Append(sample(i))
		require.NoError(t, err)
	}
	require.NoError(t, logs[1].Close())
	require.NoError(t, logs[0].Close())
	rep, err := Verify(path)
	require.NoError(t, err)
	assert.Equal(t, uint64(6), rep.LastSeq)
	assert.Equal(t, uint64(6), rep.HeadSeq)
}
