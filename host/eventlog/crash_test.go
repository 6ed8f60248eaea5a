package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	crashChildEnv = "GATEHOST_EVENTLOG_CRASH_CHILD"
	// crashIntervalEnv is the child's Options.HeadInterval.
	crashIntervalEnv = "GATEHOST_EVENTLOG_CRASH_HEAD_INTERVAL"
)

// TestCrashChild is the child process of TestCrashSIGKILL; it does nothing
// in an ordinary run. It opens the log and appends from 4 goroutines as fast
// as it can, printing "seq worker n" for each record once Append returned.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("child of TestCrashSIGKILL only")
	}
	interval, err := time.ParseDuration(os.Getenv(crashIntervalEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "head interval:", err)
		os.Exit(3)
	}
	l, err := Open(path, Options{Logger: discard(), HeadInterval: interval})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	fmt.Fprintln(os.Stdout, "ready") // the log exists: the parent may kill from now on
	var mu sync.Mutex                // one ack line per write(2)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				data := fmt.Appendf(nil, `{"w":%d,"n":%d}`, w, n)
				recs := []Record{{Kind: "crash-test", Verdict: "accepted", Data: data}}
				if n%7 == 0 { // sometimes a batch of two, written in one write
					recs = append(recs, Record{Kind: "crash-test", Verdict: "rejected", Data: data})
				}
				out, err := l.Append(recs...)
				if err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(4)
				}
				mu.Lock()
				for _, r := range out {
					fmt.Fprintf(os.Stdout, "%d %d %d\n", r.Seq, w, n)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestCrashSIGKILL starts a child that appends as fast as it can and kills
// it with SIGKILL at a random moment, over and over on one log. After each
// kill: every record whose Append had returned is in the log with its data;
// the chain and head verify; and a torn tail is repaired on open, with a
// repair record. A kill lands mid-write only rarely, so every fifth round
// also tears the tail by hand (as a crash of the machine would). It runs
// with the head replaced in every commit and with a trailing head
// (Options.HeadInterval), which a kill leaves behind the log.
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 150 processes")
	}
	rounds := 100
	if s := os.Getenv("GATEHOST_CRASH_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	for _, mode := range []struct {
		name     string
		interval time.Duration
		rounds   int
	}{
		{"head every commit", 0, rounds},
		{"head interval", 2 * time.Millisecond, max(1, rounds/2)},
	} {
		t.Run(mode.name, func(t *testing.T) { crashRounds(t, mode.interval, mode.rounds) })
	}
}

func crashRounds(t *testing.T, interval time.Duration, rounds int) {
	exe, err := os.Executable()
	require.NoError(t, err)
	path := t.TempDir() + "/events.jsonl"
	rng := rand.New(rand.NewPCG(1, 2))
	var acked, lost, tornSeen, tornMade, repairs int
	var checkedEnd int64 // bytes of the log already checked
	for round := range rounds {
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashIntervalEnv+"="+interval.String())
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		acks := map[uint64]string{} // seq → "w n"
		ready := make(chan bool, 1) // whether the child said it opened the log
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			opened := false
			for !opened && sc.Scan() {
				opened = sc.Text() == "ready"
			}
			ready <- opened
			for sc.Scan() {
				seq, wn, ok := strings.Cut(sc.Text(), " ")
				s, err := strconv.ParseUint(seq, 10, 64)
				if ok && err == nil {
					acks[s] = wn
				}
			}
			_, _ = io.Copy(io.Discard, stdout)
		}()
		// Kill only once the child has opened the log, however slow the
		// machine: a child killed earlier tests nothing. The delay after
		// that only varies where in its appends the kill lands.
		if !<-ready {
			<-done
			_ = cmd.Wait()
			t.Fatalf("round %d: child ended before opening the log: %s", round, stderr.String())
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		<-done
		err = cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled(), "child ended by itself: %v\n%s", err, stderr.String())

		// What did the kill leave? Verify never modifies the file.
		rep, err := Verify(path)
		require.NoError(t, err, "round %d", round)
		if rep.TornTail {
			tornSeen++
		}
		if round%5 == 4 && !rep.TornTail {
			// Tear it: half of a new line, as a crash mid-write leaves.
			appendBytes(t, path, `{"seq":`+strconv.FormatUint(rep.LastSeq+1, 10)+`,"time":"2026-`)
			tornMade++
		}
		wantRepair := rep.TornTail || round%5 == 4
		l, err := Open(path, Options{Logger: discard()})
		require.NoError(t, err, "round %d", round)
		require.Equal(t, wantRepair, l.Repaired() > 0, "round %d", round)
		require.NoError(t, l.Close())
		if wantRepair {
			repairs++
		}

		// Every acknowledged record is present with its data; the chain
		// and head verify.
		rep, err = Verify(path)
		require.NoError(t, err, "round %d", round)
		require.False(t, rep.TornTail)
		require.Equal(t, rep.LastSeq, rep.HeadSeq)
		got, end := readFrom(t, path, checkedEnd)
		for seq, wn := range acks {
			acked++
			r, ok := got[seq]
			if !ok {
				lost++
				t.Errorf("round %d: acknowledged record %d lost", round, seq)
				continue
			}
			var w, n int
			_, _ = fmt.Sscanf(wn, "%d %d", &w, &n)
			require.JSONEq(t, fmt.Sprintf(`{"w":%d,"n":%d}`, w, n), string(r.Data), "record %d", seq)
		}
		if wantRepair {
			last := got[rep.LastSeq]
			require.Equal(t, KindRepair, last.Kind, "round %d: the repair is recorded", round)
		}
		checkedEnd = end
	}
	t.Logf("SIGKILL crash test: %d rounds, %d records acknowledged, %d lost; torn tails: %d left by a kill, %d made by hand; %d repairs recorded",
		rounds, acked, lost, tornSeen, tornMade, repairs)
	require.Zero(t, lost)
}

// readFrom decodes the log's records from byte offset off on, by seq, and
// returns the offset of its end.
func readFrom(t *testing.T, path string, off int64) (map[uint64]Record, int64) {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[uint64]Record{}
	for _, line := range bytes.Split(b[off:], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r Record
		require.NoError(t, json.Unmarshal(line, &r))
		out[r.Seq] = r
	}
	return out, int64(len(b))
}
