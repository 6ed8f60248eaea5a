package eventlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collect reads the log at path after afterSeq from pos and returns the
// seqs fn saw and where the read stopped.
func collect(t *testing.T, path string, pos Position, afterSeq uint64) ([]uint64, Position, error) {
	t.Helper()
	var seqs []uint64
	next, err := ReadAfter(path, pos, afterSeq, func(r Record) error {
		seqs = append(seqs, r.Seq)
		return nil
	})
	return seqs, next, err
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestReadFrom(t *testing.T) {
	path := newLog(t, 10)
	lines := readLines(t, path)
	for _, tc := range []struct {
		name  string
		after uint64
		want  []uint64
	}{
		{"from the start", 0, seqRange(1, 10)},
		{"after a record", 4, seqRange(5, 10)},
		{"after the last", 10, nil},
		{"after the end", 99, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Record
			require.NoError(t, ReadFrom(path, tc.after, func(r Record) error {
				got = append(got, r)
				return nil
			}))
			var seqs []uint64
			for _, r := range got {
				seqs = append(seqs, r.Seq)
				// Records come back exactly as they are on the chain.
				line, hash := encode(t, r)
				assert.Equal(t, lines[r.Seq-1], line)
				assert.Equal(t, r.Hash, hash)
			}
			assert.Equal(t, tc.want, seqs)
		})
	}
}

func TestReadFromStopsAtCallbackError(t *testing.T) {
	path := newLog(t, 6)
	stop := errors.New("stop")
	var seen []uint64
	pos, err := ReadAfter(path, Position{}, 0, func(r Record) error {
		if r.Seq == 4 {
			return stop
		}
		seen = append(seen, r.Seq)
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, []uint64{1, 2, 3}, seen)
	assert.Equal(t, uint64(3), pos.Seq, "the position is before the refused record")

	// Resuming there hands over the refused record first.
	seqs, end, err := collect(t, path, pos, pos.Seq)
	require.NoError(t, err)
	assert.Equal(t, seqRange(4, 6), seqs)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), end.Offset)
	assert.Equal(t, uint64(6), end.Seq)
}

func TestReadAfterResumesOnAGrowingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := openLog(t, path)
	for i := range 3 {
		_, err := l.Append(sample(i))
		require.NoError(t, err)
	}
	seqs, pos, err := collect(t, path, Position{}, 0)
	require.NoError(t, err)
	require.Equal(t, seqRange(1, 3), seqs)
	_, last := l.Last()
	assert.Equal(t, last, pos.Hash)

	for i := range 4 {
		_, err := l.Append(sample(i))
		require.NoError(t, err)
	}
	seqs, pos, err = collect(t, path, pos, 0)
	require.NoError(t, err)
	assert.Equal(t, seqRange(4, 7), seqs, "only what was appended since")
	seqs, _, err = collect(t, path, pos, 0)
	require.NoError(t, err)
	assert.Empty(t, seqs)
}

func TestReadFromLeavesAnAppendUnderWay(t *testing.T) {
	for _, tail := range []string{`{"seq":7,"time":"20`, "{\"seq\":7,\n"} {
		path := newLog(t, 6)
		appendBytes(t, path, tail)
		seqs, pos, err := collect(t, path, Position{}, 0)
		require.NoError(t, err, "tail %q", tail)
		assert.Equal(t, seqRange(1, 6), seqs)
		assert.Equal(t, uint64(6), pos.Seq)
	}
}

func TestReadFromRefusesABrokenChain(t *testing.T) {
	path := newLog(t, 6)
	lines := readLines(t, path)
	lines[2] = strings.Replace(lines[2], `"accepted"`, `"rejected"`, 1)
	writeLines(t, path, lines)
	seqs, pos, err := collect(t, path, Position{}, 0)
	ce := requireChainError(t, err, ReasonBadHash)
	assert.Equal(t, path, ce.Path)
	assert.Equal(t, 3, ce.Line)
	assert.Equal(t, []uint64{1, 2}, seqs, "nothing past the break is handed over")
	assert.Equal(t, uint64(2), pos.Seq)

	// A forged record that re-hashes itself still breaks the prev link.
	path = newLog(t, 6)
	lines = readLines(t, path)
	r := decode(t, lines[3])
	r.Prev = strings.Repeat("0", 64)
	lines[3], _ = encode(t, r)
	writeLines(t, path, lines)
	err = ReadFrom(path, 5, func(Record) error { return nil })
	requireChainError(t, err, ReasonPrevMismatch)

	// So does resuming from a position whose hash is not the chain's.
	path = newLog(t, 6)
	stop := errors.New("stop")
	pos, err = ReadAfter(path, Position{}, 0, func(r Record) error {
		if r.Seq == 4 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	pos.Hash = strings.Repeat("1", 64)
	_, _, err = collect(t, path, pos, 0)
	requireChainError(t, err, ReasonPrevMismatch)
}

func TestReadAfterRefusesABadPosition(t *testing.T) {
	path := newLog(t, 3)
	_, pos, err := collect(t, path, Position{}, 0)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, pos.Offset-1))
	_, _, err = collect(t, path, pos, 0)
	require.ErrorIs(t, err, ErrPositionBeyondEnd)

	for _, bad := range []Position{{Offset: -1}, {Offset: 10}, {Seq: 2}} {
		_, _, err = collect(t, path, bad, 0)
		require.Error(t, err, "%+v", bad)
	}
	err = ReadFrom(filepath.Join(t.TempDir(), "missing.jsonl"), 0, func(Record) error { return nil })
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestReadFromWhileAppending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := openLog(t, path)
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := l.Append(sample(w*each+i), sample(w*each+i+1))
				assert.NoError(t, err)
			}
		})
	}
	// Every read sees a contiguous, verified prefix of the chain.
	var pos Position
	for range 20 {
		seqs, next, err := collect(t, path, pos, 0)
		require.NoError(t, err)
		if len(seqs) > 0 {
			assert.Equal(t, seqRange(pos.Seq+1, next.Seq), seqs)
		}
		pos = next
	}
	wg.Wait()
	seqs, next, err := collect(t, path, pos, 0)
	require.NoError(t, err)
	if len(seqs) > 0 {
		assert.Equal(t, seqRange(pos.Seq+1, next.Seq), seqs)
	}
	assert.Equal(t, uint64(writers*each*2), next.Seq)
}
