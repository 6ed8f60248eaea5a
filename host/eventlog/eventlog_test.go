package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample(i int) Record {
	kind := KindStage
	if i%3 == 0 {
		kind = KindDecision
	}
	return Record{
		Kind:         kind,
		RunID:        fmt.Sprintf("run-%d", i/3),
		Pipeline:     "admission",
		Stage:        "static-verify",
		Plugin:       "static-verify",
		ModuleSHA256: strings.Repeat("ab", 32),
		ConfigDigest: strings.Repeat("cd", 32),
		ABIVersion:   1,
		Verdict:      "accepted",
		Reason:       "",
		RequestID:    fmt.Sprintf("req-%d", i),
		Data:         json.RawMessage(fmt.Sprintf(`{ "findings": [], "i": %d, "note": "<&> \u00e9" }`, i)),
	}
}

func openLog(t testing.TB, path string) *Log {
	t.Helper()
	l, err := Open(path, Options{NoSync: true, Logger: discard()})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newLog returns the path of a closed log holding n records appended one by
// one, so that the head names the last of them.
func newLog(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := openLog(t, path)
	for i := range n {
		_, err := l.Append(sample(i))
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	return path
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func writeLines(t testing.TB, path string, lines []string) {
	t.Helper()
	s := strings.Join(lines, "\n")
	if len(lines) > 0 {
		s += "\n"
	}
	require.NoError(t, os.WriteFile(path, []byte(s), 0o640))
}

func decode(t testing.TB, line string) Record {
	t.Helper()
	var r Record
	require.NoError(t, json.Unmarshal([]byte(line), &r))
	return r
}

// encode re-encodes r with a freshly computed hash, as a forger would.
func encode(t testing.TB, r Record) (string, string) {
	t.Helper()
	b, h, err := appendLine(nil, &r)
	require.NoError(t, err)
	return string(b), h
}

func requireChainError(t testing.TB, err error, reason string) *ChainError {
	t.Helper()
	var ce *ChainError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, reason, ce.Reason, "error: %v", err)
	return ce
}

func TestRoundTrip(t *testing.T) {
	for _, batch := range []int{1, 3, 10} {
		t.Run(fmt.Sprint("batch", batch), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a", "b", "events.jsonl")
			l, err := Open(path, Options{Logger: discard()}) // with fsync
			require.NoError(t, err)
			defer l.Close()

			seq, hash := l.Last()
			require.Equal(t, uint64(0), seq)
			require.Equal(t, GenesisPrev, hash)

			var all []Record
			for i := 0; i < 12; i += batch {
				var in []Record
				for j := i; j < i+batch; j++ {
					in = append(in, sample(j))
				}
				out, err := l.Append(in...)
				require.NoError(t, err)
				require.Len(t, out, batch)
				all = append(all, out...)
			}
			for i, r := range all {
				require.Equal(t, uint64(i+1), r.Seq)
				require.Len(t, r.Hash, 64)
				if i == 0 {
					require.Equal(t, GenesisPrev, r.Prev)
				} else {
					require.Equal(t, all[i-1].Hash, r.Prev)
				}
				require.Equal(t, time.UTC, r.Time.Location())
			}
			seq, hash = l.Last()
			last := all[len(all)-1]
			require.Equal(t, last.Seq, seq)
			require.Equal(t, last.Hash, hash)

			rep, err := Verify(path)
			require.NoError(t, err)
			require.Equal(t, Report{Records: last.Seq, LastSeq: last.Seq, LastHash: last.Hash, HeadSeq: last.Seq}, rep)

			// What is on disk decodes to what Append returned (data compacted).
			lines := readLines(t, path)
			require.Len(t, lines, len(all))
			for i, line := range lines {
				got := decode(t, line)
				want := all[i]
				var compact bytes.Buffer
				require.NoError(t, json.Compact(&compact, want.Data))
				want.Data = compact.Bytes()
				require.True(t, want.Time.Equal(got.Time))
				got.Time = want.Time
				require.Equal(t, want, got)
			}

			head, err := os.ReadFile(path + ".head")
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf(`{"seq":%d,"hash":"%s"}`+"\n", last.Seq, last.Hash), string(head))
		})
	}
}

// TestCanonicalEncoding pins the documented format so that another
// implementation can verify a log.
func TestCanonicalEncoding(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 60_000_000, time.FixedZone("X", 3600))
	tests := []struct {
		name   string
		rec    Record
		hashed string // canonical encoding without the hash member
	}{
		{
			name: "minimal",
			rec:  Record{Seq: 1, Time: ts, Prev: GenesisPrev, Kind: "decision", Verdict: "rejected"},
			hashed: `{"seq":1,"time":"2025-01-02T02:04:05.06Z","prev":"` + GenesisPrev +
				`","kind":"decision","run_id":"","pipeline":"","verdict":"rejected"}`,
		},
		{
			name: "all fields and escapes",
			rec: Record{
				Seq: 42, Time: ts.Add(-60 * time.Millisecond), Prev: strings.Repeat("1", 64), Kind: "stage",
				RunID: "r\"1\\", Pipeline: "p\n\t\x01", Stage: "s<>&\u2028", Plugin: "pl", ModuleSHA256: "m",
				ConfigDigest: "c", ABIVersion: -3, Verdict: "inconclusive", Reason: "plugin_trap",
				RequestID: "q", Data: json.RawMessage(" {\"b\" : [1, 2],\n \"a\":\"\\u00e9 x\"} "),
			},
			hashed: `{"seq":42,"time":"2025-01-02T02:04:05Z","prev":"` + strings.Repeat("1", 64) +
				`","kind":"stage","run_id":"r\"1\\","pipeline":"p\u000a\u0009\u0001","stage":"s<>&` + "\u2028" +
				`","plugin":"pl","module_sha256":"m","config_digest":"c","abi_version":-3,` +
				`"verdict":"inconclusive","reason":"plugin_trap","request_id":"q","data":{"b":[1,2],"a":"\u00e9 x"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := sha256.Sum256([]byte(tt.hashed))
			want := hex.EncodeToString(sum[:])
			prefixEnd := strings.Index(tt.hashed, `,"kind":`)
			wantLine := tt.hashed[:prefixEnd] + `,"hash":"` + want + `"` + tt.hashed[prefixEnd:]

			line, hash := encode(t, tt.rec)
			require.Equal(t, want, hash)
			require.Equal(t, wantLine, line)

			// The line verifies as the first record of a log.
			r := decode(t, line)
			var scratch []byte
			require.Nil(t, checkRecord(&r, []byte(line), r.Seq-1, r.Prev, &scratch))
		})
	}
}

func TestInvalidRecordsWriteNothing(t *testing.T) {
	big := Record{Kind: "stage", Data: json.RawMessage(`"` + strings.Repeat("x", MaxRecordBytes) + `"`)}
	tests := []struct {
		name string
		recs []Record
		want error
	}{
		{"empty kind", []Record{{Verdict: "accepted"}}, ErrInvalidRecord},
		{"bad data", []Record{{Kind: "stage", Data: json.RawMessage(`{"a":`)}}, ErrInvalidRecord},
		{"whitespace data", []Record{{Kind: "stage", Data: json.RawMessage(`  `)}}, ErrInvalidRecord},
		{"invalid utf8 field", []Record{{Kind: "stage", Verdict: "\xff"}}, ErrInvalidRecord},
		{"invalid utf8 data", []Record{{Kind: "stage", Data: json.RawMessage("\"\xff\"")}}, ErrInvalidRecord},
		{"year out of range", []Record{{Kind: "stage", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}, ErrInvalidRecord},
		{"too large", []Record{big}, ErrRecordTooLarge},
		{"good then too large", []Record{sample(1), big}, ErrRecordTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newLog(t, 2)
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			l := openLog(t, path)
			_, err = l.Append(tt.recs...)
			require.ErrorIs(t, err, tt.want)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, before, after)
			// Not sticky: the log still takes records.
			out, err := l.Append(sample(9))
			require.NoError(t, err)
			require.Equal(t, uint64(3), out[0].Seq)
		})
	}
}

func TestRecordAtCapFits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := openLog(t, path)
	r := Record{Kind: "stage", Time: time.Unix(1, 0), Data: json.RawMessage(`""`)}
	line, _ := encode(t, Record{Seq: 1, Time: r.Time, Prev: GenesisPrev, Kind: r.Kind, Data: r.Data})
	r.Data = json.RawMessage(`"` + strings.Repeat("x", MaxRecordBytes-len(line)) + `"`)
	_, err := l.Append(r)
	require.NoError(t, err)
	_, err = Verify(path)
	require.NoError(t, err)
}

func TestTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := openLog(t, path)
	given := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("E", -5*3600))
	before := time.Now()
	out, err := l.Append(Record{Kind: "stage"}, Record{Kind: "stage", Time: given})
	require.NoError(t, err)
	require.False(t, out[0].Time.Before(before.Truncate(time.Second)))
	require.Equal(t, time.UTC, out[0].Time.Location())
	require.Equal(t, given.UTC(), out[1].Time)
	require.Contains(t, readLines(t, path)[1], `"time":"2024-05-06T12:08:09.123456789Z"`)
}

func TestReopenContinuesChain(t *testing.T) {
	path := newLog(t, 5)
	rep, err := Verify(path)
	require.NoError(t, err)

	l := openLog(t, path)
	seq, hash := l.Last()
	require.Equal(t, rep.LastSeq, seq)
	require.Equal(t, rep.LastHash, hash)
	require.Zero(t, l.Repaired())
	out, err := l.Append(sample(5), sample(6))
	require.NoError(t, err)
	require.Equal(t, uint64(6), out[0].Seq)
	require.Equal(t, hash, out[0].Prev)
	require.NoError(t, l.Close())

	rep, err = Verify(path)
	require.NoError(t, err)
	require.Equal(t, uint64(7), rep.Records)
	require.Equal(t, out[1].Hash, rep.LastHash)
}

func TestEmptyLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := openLog(t, path)
	require.NoError(t, l.Close())
	rep, err := Verify(path)
	require.NoError(t, err)
	require.Equal(t, Report{LastHash: GenesisPrev}, rep)
	l = openLog(t, path)
	out, err := l.Append(sample(0))
	require.NoError(t, err)
	require.Equal(t, GenesisPrev, out[0].Prev)
}

func TestCreatesWithModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "y")
	path := filepath.Join(dir, "events.jsonl")
	openLog(t, path)
	for p, mode := range map[string]os.FileMode{dir: 0o750, path: 0o640, path + ".head": 0o640} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Zero(t, fi.Mode().Perm()&^mode, "%s has mode %v", p, fi.Mode())
	}
}

// TestLocked holds the log's lock from another descriptor, as another
// writer in the middle of a very long commit would: Open and Append wait up
// to LockTimeout, then fail with ErrLocked, and the Log stays usable.
func TestLocked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	path := newLog(t, 1)
	holder, err := os.Open(path)
	require.NoError(t, err)
	defer holder.Close()
	require.NoError(t, filelock.Lock(holder))

	_, err = Open(path, Options{NoSync: true, Logger: discard(), LockTimeout: -1})
	require.ErrorIs(t, err, ErrLocked)
	_, err = Open(path, Options{NoSync: true, Logger: discard(), LockTimeout: 50 * time.Millisecond})
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorContains(t, err, path)

	// A waiting Open gets the log once the holder lets go.
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = filelock.Unlock(holder)
	}()
	l, err := Open(path, Options{NoSync: true, Logger: discard(), LockTimeout: 10 * time.Second})
	require.NoError(t, err)
	defer l.Close()

	// Appends wait the same way, and a timed-out one writes nothing and
	// leaves the Log usable.
	require.NoError(t, filelock.Lock(holder))
	l.opts.LockTimeout = 50 * time.Millisecond
	_, err = l.Append(sample(1))
	require.ErrorIs(t, err, ErrLocked)
	require.NotErrorIs(t, err, ErrBroken)
	l.opts.LockTimeout = -1
	_, err = l.Append(sample(2))
	require.ErrorIs(t, err, ErrLocked)
	l.opts.LockTimeout = 10 * time.Second
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = filelock.Unlock(holder)
	}()
	out, err := l.Append(sample(3))
	require.NoError(t, err)
	require.Equal(t, uint64(2), out[0].Seq, "the timed-out appends left no gap")
	rep, err := Verify(path)
	require.NoError(t, err)
	require.Equal(t, uint64(2), rep.Records)

	// A wait that timed out and then got the lock while no append waited
	// lets it go at once: an idle Log never keeps other writers out.
	require.NoError(t, filelock.Lock(holder))
	l.opts.LockTimeout = 20 * time.Millisecond
	_, err = l.Append(sample(4))
	require.ErrorIs(t, err, ErrLocked)
	require.NoError(t, filelock.Unlock(holder))
	require.Eventually(t, func() bool {
		if filelock.TryLock(holder) != nil {
			return false
		}
		require.NoError(t, filelock.Unlock(holder))
		return true
	}, 5*time.Second, 5*time.Millisecond)
	l.opts.LockTimeout = 10 * time.Second
	out, err = l.Append(sample(5))
	require.NoError(t, err)
	require.Equal(t, uint64(3), out[0].Seq)
}

func TestClose(t *testing.T) {
	path := newLog(t, 1)
	l := openLog(t, path)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	_, err := l.Append(sample(1))
	require.ErrorIs(t, err, ErrClosed)
}

// TestTamperingDetected edits a log of 6 records (lines 0..5) and expects
// Verify to fail and Open to refuse without touching the file.
func TestTamperingDetected(t *testing.T) {
	reencode := func(t *testing.T, lines []string, i int, edit func(*Record)) {
		r := decode(t, lines[i])
		edit(&r)
		lines[i], _ = encode(t, r)
	}
	tests := []struct {
		name   string
		tamper func(t *testing.T, lines []string) []string
		reason string
		line   int
	}{
		{"change verdict", func(t *testing.T, l []string) []string {
			l[2] = strings.Replace(l[2], `"verdict":"accepted"`, `"verdict":"rejected"`, 1)
			return l
		}, ReasonBadHash, 3},
		{"change data", func(t *testing.T, l []string) []string {
			l[2] = strings.Replace(l[2], `"i":2`, `"i":7`, 1)
			return l
		}, ReasonBadHash, 3},
		{"change time", func(t *testing.T, l []string) []string {
			r := decode(t, l[2])
			l[2] = strings.Replace(l[2], r.Time.Format(time.RFC3339Nano), r.Time.Add(time.Hour).Format(time.RFC3339Nano), 1)
			return l
		}, ReasonBadHash, 3},
		{"change hash", func(t *testing.T, l []string) []string {
			r := decode(t, l[2])
			l[2] = strings.Replace(l[2], r.Hash, strings.Repeat("f", 64), 1)
			return l
		}, ReasonBadHash, 3},
		{"delete line", func(t *testing.T, l []string) []string {
			return append(l[:2:2], l[3:]...)
		}, ReasonSeqGap, 3},
		{"delete first line", func(t *testing.T, l []string) []string {
			return l[1:]
		}, ReasonSeqGap, 1},
		{"swap lines", func(t *testing.T, l []string) []string {
			l[2], l[3] = l[3], l[2]
			return l
		}, ReasonSeqGap, 3},
		{"duplicate line", func(t *testing.T, l []string) []string {
			return append(l[:3:3], l[2:]...)
		}, ReasonSeqGap, 4},
		{"edit prev", func(t *testing.T, l []string) []string {
			r := decode(t, l[2])
			l[2] = strings.Replace(l[2], r.Prev, strings.Repeat("0", 64), 1)
			return l
		}, ReasonBadHash, 3},
		{"edit prev and rehash", func(t *testing.T, l []string) []string {
			reencode(t, l, 2, func(r *Record) { r.Prev = strings.Repeat("e", 64) })
			return l
		}, ReasonPrevMismatch, 3},
		{"edit verdict and rehash", func(t *testing.T, l []string) []string {
			reencode(t, l, 2, func(r *Record) { r.Verdict = "rejected" })
			return l
		}, ReasonPrevMismatch, 4},
		{"renumber and rehash", func(t *testing.T, l []string) []string {
			reencode(t, l, 2, func(r *Record) { r.Seq = 9 })
			return l
		}, ReasonSeqGap, 3},
		{"reformat line", func(t *testing.T, l []string) []string {
			l[2] = strings.Replace(l[2], `,"kind":`, `, "kind":`, 1)
			return l
		}, ReasonNonCanonical, 3},
		{"reformat data", func(t *testing.T, l []string) []string {
			l[2] = strings.Replace(l[2], `"findings":[]`, `"findings": []`, 1)
			return l
		}, ReasonNonCanonical, 3},
		{"unknown field", func(t *testing.T, l []string) []string {
			l[2] = strings.TrimSuffix(l[2], `}`) + `,"extra":1}`
			return l
		}, ReasonNonCanonical, 3},
		{"duplicate key", func(t *testing.T, l []string) []string {
			l[2] = strings.Replace(l[2], `"verdict":"accepted"`, `"verdict":"rejected","verdict":"accepted"`, 1)
			return l
		}, ReasonNonCanonical, 3},
		{"garbage line", func(t *testing.T, l []string) []string {
			l[2] = "not json"
			return l
		}, ReasonUnparsable, 3},
		{"blank line", func(t *testing.T, l []string) []string {
			return append(l[:2:2], append([]string{""}, l[2:]...)...)
		}, ReasonUnparsable, 3},
		{"wrong types", func(t *testing.T, l []string) []string {
			l[2] = `{"seq":"3"}`
			return l
		}, ReasonUnparsable, 3},
		{"valid JSON last line", func(t *testing.T, l []string) []string {
			return append(l, `{"seq":7}`)
		}, ReasonNonCanonical, 7},
		{"edited last line", func(t *testing.T, l []string) []string {
			l[5] = strings.Replace(l[5], `"verdict":"accepted"`, `"verdict":"rejected"`, 1)
			return l
		}, ReasonBadHash, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newLog(t, 6)
			writeLines(t, path, tt.tamper(t, readLines(t, path)))
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			_, err = Verify(path)
			ce := requireChainError(t, err, tt.reason)
			assert.Equal(t, tt.line, ce.Line)
			assert.Equal(t, path, ce.Path)

			_, err = Open(path, Options{Logger: discard()})
			requireChainError(t, err, tt.reason)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, before, after, "file modified")
		})
	}
}

func TestHeadChecks(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string)
		reason string
	}{
		{"truncate last record", func(t *testing.T, path string) {
			writeLines(t, path, readLines(t, path)[:5])
		}, ReasonTruncated},
		{"truncate last 3", func(t *testing.T, path string) {
			writeLines(t, path, readLines(t, path)[:3])
		}, ReasonTruncated},
		{"truncate all", func(t *testing.T, path string) {
			writeLines(t, path, nil)
		}, ReasonTruncated},
		{"cut last record mid-line", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b[:len(b)-20], 0o640))
		}, ReasonTruncated},
		{"rewrite tail consistently", func(t *testing.T, path string) {
			// Forge records 4..6 with a valid chain; the head still names the original 6.
			lines := readLines(t, path)
			prev := decode(t, lines[2]).Hash
			for i := 3; i < 6; i++ {
				r := decode(t, lines[i])
				r.Prev, r.Verdict = prev, "rejected"
				lines[i], prev = encode(t, r)
			}
			writeLines(t, path, lines)
		}, ReasonHeadMismatch},
		{"head deleted", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path+".head"))
		}, ReasonHeadMissing},
		{"head garbage", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".head", []byte("{"), 0o640))
		}, ReasonBadHead},
		{"head empty", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".head", nil, 0o640))
		}, ReasonBadHead},
		{"head unknown field", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".head", []byte(`{"seq":1,"hash":"`+GenesisPrev+`","x":1}`), 0o640))
		}, ReasonBadHead},
		{"head bad hash", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".head", []byte(`{"seq":1,"hash":"ABC"}`), 0o640))
		}, ReasonBadHead},
		{"head seq 0 wrong hash", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".head", []byte(`{"seq":0,"hash":"`+strings.Repeat("1", 64)+`"}`), 0o640))
		}, ReasonBadHead},
		{"head names other hash", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".head", []byte(`{"seq":2,"hash":"`+strings.Repeat("1", 64)+`"}`), 0o640))
		}, ReasonHeadMismatch},
		{"head beyond log", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".head", []byte(`{"seq":7,"hash":"`+strings.Repeat("1", 64)+`"}`), 0o640))
		}, ReasonTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newLog(t, 6)
			tt.tamper(t, path)
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			_, err = Verify(path)
			requireChainError(t, err, tt.reason)
			_, err = Open(path, Options{Logger: discard()})
			requireChainError(t, err, tt.reason)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, before, after, "file modified")
		})
	}
}

// A crash after the log is fsynced but before the head is replaced leaves the
// log ahead of its head, which is fine; Open catches the head up.
func TestLogAheadOfHead(t *testing.T) {
	path := newLog(t, 3)
	oldHead, err := os.ReadFile(path + ".head")
	require.NoError(t, err)
	l := openLog(t, path)
	out, err := l.Append(sample(3), sample(4))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(path+".head", oldHead, 0o640))

	rep, err := Verify(path)
	require.NoError(t, err)
	require.Equal(t, uint64(5), rep.LastSeq)
	require.Equal(t, uint64(3), rep.HeadSeq)

	l = openLog(t, path)
	require.NoError(t, l.Close())
	rep, err = Verify(path)
	require.NoError(t, err)
	require.Equal(t, uint64(5), rep.HeadSeq)
	require.Equal(t, out[1].Hash, rep.LastHash)
}

func TestTornTail(t *testing.T) {
	tests := []struct {
		name string
		tear func(t *testing.T, path string) // applied after 4 records, head at 3
	}{
		{"half a line", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b[:len(b)-40], 0o640))
		}},
		{"missing newline only", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b[:len(b)-1], 0o640))
		}},
		{"one byte", func(t *testing.T, path string) {
			lines := readLines(t, path)
			writeLines(t, path, lines[:3])
			appendBytes(t, path, "{")
		}},
		{"zero fill", func(t *testing.T, path string) {
			lines := readLines(t, path)
			writeLines(t, path, lines[:3])
			appendBytes(t, path, strings.Repeat("\x00", 4096))
		}},
		{"garbage with newline", func(t *testing.T, path string) {
			lines := readLines(t, path)
			writeLines(t, path, lines[:3])
			appendBytes(t, path, lines[3][:50]+"\x00\x00\x00"+lines[3][60:]+"\n")
		}},
		{"blank last line", func(t *testing.T, path string) {
			lines := readLines(t, path)
			writeLines(t, path, lines[:3])
			appendBytes(t, path, "\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newLog(t, 3)
			head, err := os.ReadFile(path + ".head")
			require.NoError(t, err)
			l := openLog(t, path)
			_, err = l.Append(sample(3))
			require.NoError(t, err)
			require.NoError(t, l.Close())
			// The crash came before the head update.
			require.NoError(t, os.WriteFile(path+".head", head, 0o640))
			tt.tear(t, path)
			torn, err := os.ReadFile(path)
			require.NoError(t, err)

			rep, err := Verify(path)
			require.NoError(t, err)
			require.True(t, rep.TornTail)
			require.Equal(t, uint64(3), rep.LastSeq)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, torn, after, "Verify modified the file")

			var logged bytes.Buffer
			l, err = Open(path, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			require.NoError(t, err)
			defer l.Close()
			require.Equal(t, rep.TornBytes, l.Repaired())
			require.Contains(t, logged.String(), "torn tail")
			require.Contains(t, logged.String(), fmt.Sprintf("bytes_dropped=%d", rep.TornBytes))
			repaired, err := os.ReadFile(path)
			require.NoError(t, err)
			kept := int64(len(torn)) - rep.TornBytes
			require.Equal(t, torn[:kept], repaired[:kept], "the repair keeps every complete record")

			// The repair is recorded as the next record.
			rep, err = Verify(path)
			require.NoError(t, err)
			require.False(t, rep.TornTail)
			require.Equal(t, uint64(4), rep.LastSeq)
			lines := readLines(t, path)
			repair := decode(t, lines[3])
			require.Equal(t, KindRepair, repair.Kind)
			require.JSONEq(t, fmt.Sprintf(`{"bytes_dropped":%d,"after_seq":3}`, l.Repaired()), string(repair.Data))

			out, err := l.Append(sample(10))
			require.NoError(t, err)
			require.Equal(t, uint64(5), out[0].Seq)
			require.Equal(t, rep.LastHash, out[0].Prev)
			rep, err = Verify(path)
			require.NoError(t, err)
			require.Equal(t, Report{Records: 5, LastSeq: 5, LastHash: out[0].Hash, HeadSeq: 5}, rep)
		})
	}
}

func appendBytes(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestAnchor(t *testing.T) {
	path := newLog(t, 6)
	lines := readLines(t, path)
	anchor := decode(t, lines[3]).Hash

	rep, err := Verify(path, VerifyOptions{Anchor: anchor})
	require.NoError(t, err)
	require.Equal(t, uint64(4), rep.AnchorSeq)

	// Rewrite records 3..6 and the head consistently: only the anchor notices.
	prev := decode(t, lines[1]).Hash
	for i := 2; i < 6; i++ {
		r := decode(t, lines[i])
		r.Prev, r.Verdict = prev, "rejected"
		lines[i], prev = encode(t, r)
	}
	writeLines(t, path, lines)
	require.NoError(t, os.WriteFile(path+".head", []byte(`{"seq":6,"hash":"`+prev+`"}`), 0o640))

	_, err = Verify(path)
	require.NoError(t, err)
	_, err = Verify(path, VerifyOptions{Anchor: anchor})
	requireChainError(t, err, ReasonAnchorNotFound)

	_, err = Verify(path, VerifyOptions{Anchor: "nothex"})
	require.Error(t, err)
}

func TestConcurrentAppend(t *testing.T) {
	for _, noSync := range []bool{true, false} {
		t.Run(fmt.Sprint("nosync=", noSync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			l, err := Open(path, Options{NoSync: noSync, Logger: discard()})
			require.NoError(t, err)
			defer l.Close()
			const workers, perWorker = 16, 40
			var wg sync.WaitGroup
			results := make([][]Record, workers)
			for w := range workers {
				wg.Go(func() {
					for i := range perWorker {
						batch := []Record{sample(w*1000 + i)}
						if i%4 == 0 {
							batch = append(batch, sample(w*1000+i+500))
						}
						out, err := l.Append(batch...)
						if !assert.NoError(t, err) {
							return
						}
						// A returned record is durable: Last is at or past it.
						seq, _ := l.Last()
						assert.GreaterOrEqual(t, seq, out[len(out)-1].Seq)
						for j := 1; j < len(out); j++ {
							assert.Equal(t, out[j-1].Seq+1, out[j].Seq)
							assert.Equal(t, out[j-1].Hash, out[j].Prev)
						}
						results[w] = append(results[w], out...)
					}
				})
			}
			wg.Wait()

			byHash := map[string]Record{}
			for _, rs := range results {
				for i, r := range rs {
					byHash[r.Hash] = r
					if i > 0 {
						require.Greater(t, r.Seq, rs[i-1].Seq)
					}
				}
			}
			total := uint64(workers * (perWorker + perWorker/4))
			require.Len(t, byHash, int(total))
			rep, err := Verify(path)
			require.NoError(t, err)
			require.Equal(t, total, rep.Records)
			require.Equal(t, total, rep.HeadSeq)
			seq, hash := l.Last()
			require.Equal(t, total, seq)
			require.Equal(t, hash, rep.LastHash)
			// What each caller got back is exactly what is on disk.
			for _, line := range readLines(t, path) {
				got := decode(t, line)
				want, ok := byHash[got.Hash]
				require.True(t, ok)
				require.Equal(t, want.Seq, got.Seq)
				require.Equal(t, want.Prev, got.Prev)
			}
		})
	}
}

// Close waits for appends in flight; none is lost or left half-written.
func TestCloseDuringAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := Open(path, Options{Logger: discard()})
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var appended uint64
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				out, err := l.Append(sample(w*100 + i))
				if errors.Is(err, ErrClosed) {
					return
				}
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				appended += uint64(len(out))
				mu.Unlock()
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, l.Close())
	wg.Wait()
	rep, err := Verify(path)
	require.NoError(t, err)
	require.False(t, rep.TornTail)
	require.Equal(t, appended, rep.Records)
	require.Equal(t, appended, rep.HeadSeq)
}

// faultyFile wraps the log's file and fails on demand.
type faultyFile struct {
	*os.File
	writeErr, syncErr error
	partial           int // bytes to write before failing a write
}

func (f *faultyFile) Write(b []byte) (int, error) {
	if f.writeErr != nil {
		n, _ := f.File.Write(b[:min(f.partial, len(b))])
		return n, f.writeErr
	}
	return f.File.Write(b)
}

func (f *faultyFile) Sync() error {
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.File.Sync()
}

func TestStickyError(t *testing.T) {
	injected := errors.New("injected")
	tests := []struct {
		name   string
		break_ func(t *testing.T, l *Log)
		// records the failed append left in the file, as seen after reopening
		wantAfter uint64
		tornAfter bool
	}{
		{"closed file", func(t *testing.T, l *Log) {
			require.NoError(t, l.f.(*os.File).Close())
		}, 2, false},
		{"short write", func(t *testing.T, l *Log) {
			l.f = &faultyFile{File: l.f.(*os.File), writeErr: injected, partial: 30}
		}, 2, true},
		{"fsync fails", func(t *testing.T, l *Log) {
			l.f = &faultyFile{File: l.f.(*os.File), syncErr: injected}
		}, 3, false},
		{"head update fails", func(t *testing.T, l *Log) {
			l.headPath = filepath.Join(t.TempDir(), "missing", "x.head")
		}, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newLog(t, 2)
			l, err := Open(path, Options{Logger: discard()})
			require.NoError(t, err)
			tt.break_(t, l)

			_, err = l.Append(sample(2))
			require.Error(t, err)
			require.NotErrorIs(t, err, ErrBroken)
			_, err = l.Append(sample(3))
			require.ErrorIs(t, err, ErrBroken)
			_, err = l.Append(sample(4))
			require.ErrorIs(t, err, ErrBroken)
			l.Close()

			// Reopening recovers: a partial line is a torn tail, a complete but
			// unacknowledged record stays (as after a crash).
			l, err = Open(path, Options{Logger: discard()})
			require.NoError(t, err)
			defer l.Close()
			require.Equal(t, tt.tornAfter, l.Repaired() > 0)
			want := tt.wantAfter
			if tt.tornAfter {
				want++ // the repair record
			}
			seq, _ := l.Last()
			require.Equal(t, want, seq)
			_, err = l.Append(sample(5))
			require.NoError(t, err)
			rep, err := Verify(path)
			require.NoError(t, err)
			require.Equal(t, want+1, rep.Records)
		})
	}
}

// gatedFile holds its first Write until release is closed, so that other
// appends queue up behind it, then fails that write if failFirst is set.
type gatedFile struct {
	*os.File
	release   chan struct{}
	failFirst bool
	mu        sync.Mutex
	writes    [][]byte
}

func (f *gatedFile) Write(b []byte) (int, error) {
	f.mu.Lock()
	first := len(f.writes) == 0
	f.writes = append(f.writes, bytes.Clone(b))
	f.mu.Unlock()
	if first {
		<-f.release
		if f.failFirst {
			return 0, errors.New("injected")
		}
	}
	return f.File.Write(b)
}

func TestGroupCommit(t *testing.T) {
	for _, failFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("failFirst=", failFirst), func(t *testing.T) {
			path := newLog(t, 1)
			l := openLog(t, path)
			gf := &gatedFile{File: l.f.(*os.File), release: make(chan struct{}), failFirst: failFirst}
			l.f = gf

			errs := make(chan error, 4)
			go func() { _, err := l.Append(sample(1)); errs <- err }()
			require.Eventually(t, func() bool { // the first commit is in Write
				gf.mu.Lock()
				defer gf.mu.Unlock()
				return len(gf.writes) == 1
			}, 5*time.Second, time.Millisecond)
			for i := range 3 {
				go func() { _, err := l.Append(sample(2+i), sample(10+i)); errs <- err }()
			}
			require.Eventually(t, func() bool { // all three queued
				l.mu.Lock()
				defer l.mu.Unlock()
				return l.seq == 8
			}, 5*time.Second, time.Millisecond)
			close(gf.release)

			for range 4 {
				err := <-errs
				if failFirst {
					require.ErrorContains(t, err, "injected")
				} else {
					require.NoError(t, err)
				}
			}
			_, err := l.Append(sample(20))
			if failFirst {
				require.ErrorIs(t, err, ErrBroken)
				require.Len(t, gf.writes, 1, "nothing written after the failure")
				return
			}
			require.NoError(t, err)
			// One write for the first append, one for the three queued, one for the last.
			require.Len(t, gf.writes, 3)
			require.Equal(t, 6, bytes.Count(gf.writes[1], []byte("\n")))
			require.NoError(t, l.Close())
			rep, err := Verify(path)
			require.NoError(t, err)
			require.Equal(t, uint64(9), rep.Records)
		})
	}
}

func TestVerifyErrors(t *testing.T) {
	_, err := Verify(filepath.Join(t.TempDir(), "nope.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = Verify("x", VerifyOptions{}, VerifyOptions{})
	require.Error(t, err)

	path := newLog(t, 1)
	appendBytes(t, path, strings.Repeat("x", MaxRecordBytes+10)+"\n")
	_, err = Verify(path)
	requireChainError(t, err, ReasonUnparsable)
}

func TestChainErrorMessage(t *testing.T) {
	err := error(&ChainError{Path: "e.jsonl", Seq: 3, Line: 3, Reason: ReasonBadHash, Detail: "x"})
	require.Equal(t, "eventlog: e.jsonl: chain broken: bad_hash at line 3 (seq 3): x", err.Error())
	wrapped := fmt.Errorf("ctx: %w", err)
	var ce *ChainError
	require.True(t, errors.As(wrapped, &ce))
}

func FuzzVerify(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.jsonl")
	l, err := Open(path, Options{NoSync: true, Logger: discard()})
	require.NoError(f, err)
	for i := range 4 {
		_, err := l.Append(sample(i))
		require.NoError(f, err)
	}
	require.NoError(f, l.Close())
	log, err := os.ReadFile(path)
	require.NoError(f, err)
	head, err := os.ReadFile(path + ".head")
	require.NoError(f, err)
	f.Add(log, head)
	f.Add(log[:len(log)-7], head)
	f.Add(log, []byte(nil))
	f.Add([]byte(nil), []byte(nil))
	f.Add([]byte("\n"), []byte(`{"seq":0,"hash":"`+GenesisPrev+`"}`))
	f.Add(append(log, "{\"seq\":5}\n"...), head)
	f.Add(bytes.ReplaceAll(log, []byte("accepted"), []byte("rejected")), head)

	// One directory per fuzzing process, emptied per input: cheaper than a
	// fresh t.TempDir, and inputs run one at a time within a process.
	path = filepath.Join(dir, "fuzz.jsonl")
	f.Fuzz(func(t *testing.T, content, headContent []byte) {
		for _, p := range []string{path + ".head", path + ".head.tmp"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		require.NoError(t, os.WriteFile(path, content, 0o640))
		if len(headContent) > 0 {
			require.NoError(t, os.WriteFile(path+".head", headContent, 0o640))
		}
		rep, verr := Verify(path)
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, bytes.Equal(content, after), "Verify modified the file")

		l, oerr := Open(path, Options{NoSync: true, Logger: discard()})
		// Open accepts exactly what Verify accepts.
		require.Equal(t, verr == nil, oerr == nil, "verify: %v, open: %v", verr, oerr)
		if oerr != nil {
			return
		}
		defer l.Close()
		require.Equal(t, rep.TornBytes, l.Repaired())
		repairs := uint64(0)
		if rep.TornTail {
			repairs = 1 // Open recorded the repair
		}
		seq, hash := l.Last()
		require.Equal(t, rep.LastSeq+repairs, seq)
		if repairs == 0 {
			require.Equal(t, rep.LastHash, hash)
		}
		_, err = l.Append(Record{Kind: "stage", Verdict: "accepted"})
		require.NoError(t, err)
		rep2, err := Verify(path)
		require.NoError(t, err)
		require.False(t, rep2.TornTail)
		require.Equal(t, rep.LastSeq+repairs+1, rep2.LastSeq)
	})
}

func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name             string
		noSync, parallel bool
		headInterval     time.Duration
	}{
		{"nosync", true, false, 0},
		{"sync", false, false, 0},
		{"sync-head-interval", false, false, time.Second},
		{"nosync-parallel", true, true, 0},
		{"sync-parallel", false, true, 0},
		{"sync-head-interval-parallel", false, true, time.Second},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "events.jsonl")
			l, err := Open(path, Options{NoSync: bc.noSync, Logger: discard(), HeadInterval: bc.headInterval})
			require.NoError(b, err)
			defer l.Close()
			r := sample(1)
			r.Data = json.RawMessage(`{"findings":[{"code":"x","severity":"blocking","message":"` + strings.Repeat("m", 400) + `"}]}`)
			b.ReportAllocs()
			if bc.parallel {
				b.SetParallelism(8) // callers mostly wait on I/O
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := l.Append(r); err != nil {
							b.Error(err)
							return
						}
					}
				})
				return
			}
			for b.Loop() {
				if _, err := l.Append(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Two Logs of one file taking turns, as two processes sharing a log
	// do: every append first reads the other's last record and chains
	// after it (its records were sealed after the tail it knew, so they
	// are sealed again).
	b.Run("nosync-two-logs", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "events.jsonl")
		var logs [2]*Log
		for i := range logs {
			l, err := Open(path, Options{NoSync: true, Logger: discard()})
			require.NoError(b, err)
			defer l.Close()
			logs[i] = l
		}
		r := sample(1)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := logs[i%2].Append(r); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkLockCatchUp is what sharing a file adds to a commit when no
// other writer appended: take the lock, stat the file, release the lock.
func BenchmarkLockCatchUp(b *testing.B) {
	l := openLog(b, filepath.Join(b.TempDir(), "events.jsonl"))
	b.ReportAllocs()
	for b.Loop() {
		if err := l.lock(); err != nil {
			b.Fatal(err)
		}
		if _, err := l.catchUp(nil); err != nil {
			b.Fatal(err)
		}
		if err := l.unlock(); err != nil {
			b.Fatal(err)
		}
	}
}
