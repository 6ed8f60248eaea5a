package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Environment of the child processes the tests below start from the test
// binary itself.
const (
	writerChildEnv = "GATEHOST_EVENTLOG_WRITER_CHILD" // the log to append to
	writerIDEnv    = "GATEHOST_EVENTLOG_WRITER_ID"
	writerNEnv     = "GATEHOST_EVENTLOG_WRITER_N"   // appends per goroutine
	tearChildEnv   = "GATEHOST_EVENTLOG_TEAR_CHILD" // the log to tear
)

func skipWithoutFlock(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no flock: one writer per file is the caller's responsibility")
	}
}

// TestSharedWriterChild is a child of TestSharedProcesses; it does nothing
// in an ordinary run. It opens the log and appends from 2 goroutines, every
// fifth call a batch of two, printing "seq hash id/goroutine/n" for each
// record Append returned.
func TestSharedWriterChild(t *testing.T) {
	path := os.Getenv(writerChildEnv)
	if path == "" {
		t.Skip("child of TestSharedProcesses only")
	}
	id := os.Getenv(writerIDEnv)
	n, _ := strconv.Atoi(os.Getenv(writerNEnv))
	l, err := Open(path, Options{Logger: discard()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range n {
				data := fmt.Appendf(nil, `{"writer":"%s/%d/%d"}`, id, g, i)
				recs := []Record{{Kind: "shared-test", Verdict: "accepted", Data: data}}
				if i%5 == 0 {
					recs = append(recs, Record{Kind: "shared-test", Verdict: "rejected", Data: data})
				}
				out, err := l.Append(recs...)
				if err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(4)
				}
				mu.Lock()
				for _, r := range out {
					fmt.Fprintf(w, "%d %s %s/%d/%d\n", r.Seq, r.Hash, id, g, i)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		os.Exit(5)
	}
	mu.Lock()
	_ = w.Flush()
	mu.Unlock()
	os.Exit(0)
}

// TestSharedProcesses runs N processes appending to one log at once (with
// fsync, as gatehost does): the chain verifies, seqs run from 1 with no gap,
// every acknowledged record is in the log exactly once with the seq and
// hash its writer was told, and nothing else is.
func TestSharedProcesses(t *testing.T) {
	skipWithoutFlock(t)
	const procs, perGoroutine = 4, 60
	exe, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	// One record before the writers start, so that they all open a log
	// with a head (the empty case is TestOpenRacesCreation's).
	pre := openLog(t, path)
	_, err = pre.Append(sample(0))
	require.NoError(t, err)
	require.NoError(t, pre.Close())

	type child struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
	}
	children := make([]*child, procs)
	for i := range children {
		c := &child{cmd: exec.Command(exe, "-test.run=^TestSharedWriterChild$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), writerChildEnv+"="+path, writerIDEnv+"="+strconv.Itoa(i),
			writerNEnv+"="+strconv.Itoa(perGoroutine))
		c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
		require.NoError(t, c.cmd.Start())
		children[i] = c
	}
	acked := map[uint64]string{} // seq → "hash writer"
	for i, c := range children {
		require.NoError(t, c.cmd.Wait(), "writer %d: %s", i, c.stderr.String())
		for _, line := range strings.Split(strings.TrimSpace(c.stdout.String()), "\n") {
			seq, rest, ok := strings.Cut(line, " ")
			require.True(t, ok, "writer %d printed %q", i, line)
			s, err := strconv.ParseUint(seq, 10, 64)
			require.NoError(t, err)
			_, dup := acked[s]
			require.False(t, dup, "seq %d acknowledged twice", s)
			acked[s] = rest
		}
	}

	perProc := 2 * (perGoroutine + perGoroutine/5)
	require.Len(t, acked, procs*perProc)
	rep, err := Verify(path)
	require.NoError(t, err)
	total := uint64(1 + procs*perProc)
	require.Equal(t, Report{Records: total, LastSeq: total, LastHash: rep.LastHash, HeadSeq: total}, rep)
	seen := map[string]int{}
	require.NoError(t, ReadFrom(path, 1, func(r Record) error {
		var d struct{ Writer string }
		require.NoError(t, json.Unmarshal(r.Data, &d))
		require.Equal(t, r.Hash+" "+d.Writer, acked[r.Seq], "seq %d", r.Seq)
		seen[d.Writer]++
		return nil
	}))
	for p := range procs {
		for g := range 2 {
			for i := range perGoroutine {
				want := 1
				if i%5 == 0 {
					want = 2
				}
				require.Equal(t, want, seen[fmt.Sprintf("%d/%d/%d", p, g, i)])
			}
		}
	}
	t.Logf("%d processes appended %d records to one log", procs, total-1)
}

// TestTwoLogsOneFile opens the log twice in one process, as two hosts
// configured with the same path do, and appends through both at once.
func TestTwoLogsOneFile(t *testing.T) {
	skipWithoutFlock(t)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	logs := []*Log{openLog(t, path), openLog(t, path)}
	const workers, perWorker = 4, 50
	var mu sync.Mutex
	got := map[uint64]Record{}
	var wg sync.WaitGroup
	for w := range workers {
		l := logs[w%2]
		wg.Go(func() {
			for i := range perWorker {
				batch := []Record{sample(w*1000 + i)}
				if i%3 == 0 {
					batch = append(batch, sample(w*1000+i+500))
				}
				out, err := l.Append(batch...)
				if !assert.NoError(t, err) {
					return
				}
				for j := 1; j < len(out); j++ {
					assert.Equal(t, out[j-1].Seq+1, out[j].Seq, "one call's records are contiguous")
					assert.Equal(t, out[j-1].Hash, out[j].Prev)
				}
				mu.Lock()
				for _, r := range out {
					_, dup := got[r.Seq]
					assert.False(t, dup, "seq %d returned twice", r.Seq)
					got[r.Seq] = r
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := uint64(workers * (perWorker + (perWorker+2)/3))
	require.Len(t, got, int(total))
	rep, err := Verify(path)
	require.NoError(t, err)
	require.Equal(t, total, rep.Records)
	require.Equal(t, total, rep.HeadSeq)
	for _, line := range readLines(t, path) {
		r := decode(t, line)
		require.Equal(t, got[r.Seq].Hash, r.Hash, "seq %d: what Append returned is what is on disk", r.Seq)
		require.Equal(t, got[r.Seq].Prev, r.Prev)
	}
	// Each Log knows the chain as of its last commit; the next append of
	// either continues the one chain.
	for _, l := range logs {
		out, err := l.Append(sample(9999))
		require.NoError(t, err)
		total++
		require.Equal(t, total, out[0].Seq)
		seq, hash := l.Last()
		require.Equal(t, total, seq)
		require.Equal(t, out[0].Hash, hash)
	}
	_, err = Verify(path)
	require.NoError(t, err)
}

// TestOpenWhileAnotherAppends opens (and closes) the log while another Log
// appends to it, from its creation on or to a log that has records: Open
// reads most of the log without the lock, so it must take what is appended
// (and the head moving) meanwhile in its stride.
func TestOpenWhileAnotherAppends(t *testing.T) {
	skipWithoutFlock(t)
	for _, fresh := range []bool{true, false} {
		t.Run(fmt.Sprint("fresh=", fresh), func(t *testing.T) {
			for round := range 20 {
				path := filepath.Join(t.TempDir(), "events.jsonl")
				if !fresh {
					path = newLog(t, 20)
				}
				done := make(chan error, 1)
				var writer *Log
				open := func() {
					var err error
					writer, err = Open(path, Options{NoSync: true, Logger: discard()})
					if err != nil {
						done <- err
					}
				}
				if !fresh {
					open()
				}
				go func() {
					if fresh { // the two Opens race to create the log
						if open(); writer == nil {
							return
						}
					}
					for i := range 200 {
						if _, err := writer.Append(sample(i)); err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
				for range 3 {
					l, err := Open(path, Options{NoSync: true, Logger: discard()})
					require.NoError(t, err, "round %d", round)
					require.Zero(t, l.Repaired(), "an append under way is not a torn tail")
					_, err = l.Append(sample(round))
					require.NoError(t, err)
					require.NoError(t, l.Close())
				}
				require.NoError(t, <-done)
				require.NoError(t, writer.Close())
				rep, err := Verify(path)
				require.NoError(t, err)
				require.False(t, rep.TornTail)
				require.Equal(t, rep.LastSeq, rep.HeadSeq)
				want := uint64(200 + 3)
				if !fresh {
					want += 20
				}
				require.Equal(t, want, rep.Records)
			}
		})
	}
}

// TestAppendWaitsForWriterMidAppend: a line another writer is in the
// middle of writing is not a torn tail. The writer holds the lock while it
// writes, so an append waits for it and chains after the completed record.
func TestAppendWaitsForWriterMidAppend(t *testing.T) {
	skipWithoutFlock(t)
	path := newLog(t, 2)
	l := openLog(t, path)

	other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, filelock.Lock(other))
	seq, hash := l.Last()
	_, lines, err := Seal(seq, hash, time.Now(), []Record{sample(7)})
	require.NoError(t, err)
	line := append(lines[0], '\n')
	_, err = other.Write(line[:40]) // half of it, for now
	require.NoError(t, err)

	type result struct {
		out []Record
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, err := l.Append(sample(8))
		res <- result{out, err}
	}()
	select {
	case r := <-res:
		t.Fatalf("append did not wait for the writer: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	_, err = other.Write(line[40:])
	require.NoError(t, err)
	require.NoError(t, WriteHead(path, Head{Seq: seq + 1, Hash: decode(t, string(lines[0])).Hash}))
	require.NoError(t, filelock.Unlock(other))

	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, seq+2, r.out[0].Seq)
	require.Zero(t, l.Repaired())
	rep, err := Verify(path)
	require.NoError(t, err)
	require.Equal(t, seq+2, rep.Records)
	require.Equal(t, string(line), readLines(t, path)[seq]+"\n", "the other writer's record is intact")
}

// TestTornTailFromAnotherWriter: a writer that crashed mid-append leaves a
// torn tail behind the back of a Log that is open; its next commit repairs
// it under the lock, records the repair, and continues the chain.
func TestTornTailFromAnotherWriter(t *testing.T) {
	skipWithoutFlock(t)
	tests := []struct {
		name string
		tear string // appended after one complete record of the crashed writer
	}{
		{"half a line", `{"seq":4,"time":"2026-`},
		{"garbage with newline", "{\"seq\":4,\x00\x00}\n"},
		{"zero fill", strings.Repeat("\x00", 512)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newLog(t, 2)
			l := openLog(t, path)
			// The crashed writer: it appended seq 3 in full, then died in
			// the middle of seq 4.
			seq, hash := l.Last()
			_, lines, err := Seal(seq, hash, time.Now(), []Record{sample(3)})
			require.NoError(t, err)
			appendBytes(t, path, string(lines[0])+"\n"+tt.tear)

			out, err := l.Append(sample(4), sample(5))
			require.NoError(t, err)
			require.Equal(t, int64(len(tt.tear)), l.Repaired())
			require.Equal(t, []uint64{5, 6}, []uint64{out[0].Seq, out[1].Seq})
			rep, err := Verify(path)
			require.NoError(t, err)
			require.Equal(t, Report{Records: 6, LastSeq: 6, LastHash: out[1].Hash, HeadSeq: 6}, rep)
			got := readLines(t, path)
			require.Equal(t, string(lines[0]), got[2], "the crashed writer's complete record is kept")
			repair := decode(t, got[3])
			require.Equal(t, KindRepair, repair.Kind)
			require.JSONEq(t, fmt.Sprintf(`{"bytes_dropped":%d,"after_seq":3}`, len(tt.tear)), string(repair.Data))
		})
	}
}

// TestTearChild is a child of TestCrashedWriterProcess; it does nothing in
// an ordinary run. It opens the log, appends two records, then, holding the
// lock as an append does, writes half of a line and kills itself.
func TestTearChild(t *testing.T) {
	path := os.Getenv(tearChildEnv)
	if path == "" {
		t.Skip("child of TestCrashedWriterProcess only")
	}
	l, err := Open(path, Options{Logger: discard()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	out, err := l.Append(sample(1), sample(2))
	if err != nil {
		fmt.Fprintln(os.Stderr, "append:", err)
		os.Exit(4)
	}
	_, lines, err := Seal(out[1].Seq, out[1].Hash, time.Now(), []Record{sample(3)})
	if err == nil {
		err = filelock.Lock(l.f)
	}
	if err == nil {
		_, err = l.f.Write(lines[0][:len(lines[0])/2])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tear:", err)
		os.Exit(5)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestCrashedWriterProcess: a process killed in the middle of an append
// (holding the lock, half a line written), then another process appends,
// with the log opened before the crash or after it: the torn tail is
// repaired, the repair recorded, the chain intact.
func TestCrashedWriterProcess(t *testing.T) {
	skipWithoutFlock(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, openedBefore := range []bool{true, false} {
		t.Run(fmt.Sprint("opened_before=", openedBefore), func(t *testing.T) {
			path := newLog(t, 3)
			var l *Log
			if openedBefore {
				l = openLog(t, path)
			}
			cmd := exec.Command(exe, "-test.run=^TestTearChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), tearChildEnv+"="+path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "child: %v %s", err, stderr.String())
			ws := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled(), "child: %v %s", err, stderr.String())

			rep, err := Verify(path)
			require.NoError(t, err)
			require.True(t, rep.TornTail)
			require.Equal(t, uint64(5), rep.Records)
			if !openedBefore {
				l = openLog(t, path)
			}
			out, err := l.Append(sample(9))
			require.NoError(t, err)
			require.Equal(t, rep.TornBytes, l.Repaired())
			require.Equal(t, uint64(7), out[0].Seq, "after the repair record")
			rep, err = Verify(path)
			require.NoError(t, err)
			require.False(t, rep.TornTail)
			require.Equal(t, Report{Records: 7, LastSeq: 7, LastHash: out[0].Hash, HeadSeq: 7}, rep)
			require.Equal(t, KindRepair, decode(t, readLines(t, path)[5]).Kind)
		})
	}
}

// TestLogShrankBehindALog: a log cut below what a Log has seen is not
// appended to.
func TestLogShrankBehindALog(t *testing.T) {
	path := newLog(t, 3)
	l := openLog(t, path)
	lines := readLines(t, path)
	writeLines(t, path, lines[:2])
	_, err := l.Append(sample(5))
	requireChainError(t, err, ReasonTruncated)
	_, err = l.Append(sample(6))
	require.ErrorIs(t, err, ErrBroken)
}

// TestForeignLineBreaksALog: a bad record appended by someone else is
// refused, as Open refuses it, rather than chained after.
func TestForeignLineBreaksALog(t *testing.T) {
	path := newLog(t, 2)
	l := openLog(t, path)
	lines := readLines(t, path)
	forged := decode(t, lines[1])
	forged.Seq = 3
	line, _ := encode(t, forged) // prev is not seq 2's hash
	appendBytes(t, path, line+"\n")
	_, err := l.Append(sample(5))
	requireChainError(t, err, ReasonPrevMismatch)
	_, err = l.Append(sample(6))
	require.ErrorIs(t, err, ErrBroken)
}

// TestOpenJudgesAgainUnderTheLock: a head that does not match the log as
// read without the lock (here none yet beside a record, as while another
// writer holds the lock in the middle of its work) is judged again under
// the lock, where it holds, rather than refused at once.
func TestOpenJudgesAgainUnderTheLock(t *testing.T) {
	skipWithoutFlock(t)
	path := newLog(t, 2)
	head, err := os.ReadFile(HeadPath(path))
	require.NoError(t, err)
	require.NoError(t, os.Remove(HeadPath(path)))
	other, err := os.Open(path)
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, filelock.Lock(other))

	type result struct {
		l   *Log
		err error
	}
	res := make(chan result, 1)
	go func() {
		l, err := Open(path, Options{NoSync: true, Logger: discard()})
		res <- result{l, err}
	}()
	select {
	case r := <-res:
		t.Fatalf("Open did not wait for the lock: %v", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, os.WriteFile(HeadPath(path), head, 0o640))
	require.NoError(t, filelock.Unlock(other))
	r := <-res
	require.NoError(t, r.err)
	defer r.l.Close()
	seq, _ := r.l.Last()
	require.Equal(t, uint64(2), seq)

	// Without the head under the lock either, the log is refused.
	require.NoError(t, r.l.Close())
	require.NoError(t, os.Remove(HeadPath(path)))
	_, err = Open(path, Options{NoSync: true, Logger: discard()})
	requireChainError(t, err, ReasonHeadMissing)
}
