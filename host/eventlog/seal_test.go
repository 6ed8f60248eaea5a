package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSealMatchesLog: Seal from a log's tail produces exactly the lines
// Log.Append writes for the same records.
func TestSealMatchesLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := openLog(t, path)
	at := time.Date(2025, 1, 2, 3, 4, 5, 60_000_000, time.FixedZone("x", 3600))
	var recs []Record
	for i := range 7 {
		r := sample(i)
		r.Time = at.Add(time.Duration(i) * time.Millisecond)
		recs = append(recs, r)
	}
	// Garbage in Seq, Prev and Hash is ignored by both.
	recs[2].Seq, recs[2].Prev, recs[2].Hash = 99, "x", "y"
	_, err := l.Append(recs[:3]...)
	require.NoError(t, err)
	seq, hash := l.Last()
	got, err := l.Append(recs[3:]...)
	require.NoError(t, err)

	sealed, lines, err := Seal(seq, hash, time.Now(), recs[3:])
	require.NoError(t, err)
	assert.Equal(t, got, sealed)
	fileLines := readLines(t, path)
	require.Len(t, fileLines, 7)
	for i, line := range lines {
		assert.Equal(t, fileLines[3+i], string(line), "line %d", 3+i)
		assert.NotContains(t, string(line), "\n")
	}
	assert.Equal(t, "x", recs[2].Prev, "Seal and Append leave their input alone")

	// Sealing from genesis gives the log's first lines.
	_, lines, err = Seal(0, GenesisPrev, time.Now(), recs[:3])
	require.NoError(t, err)
	for i, line := range lines {
		assert.Equal(t, fileLines[i], string(line))
	}
}

func TestSealTimes(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("y", -7200))
	own := time.Date(2024, 1, 1, 0, 0, 0, 5, time.FixedZone("z", 3600))
	recs := []Record{{Kind: "a", Verdict: "v"}, {Kind: "b", Verdict: "v", Time: own}}
	sealed, lines, err := Seal(0, GenesisPrev, now, recs)
	require.NoError(t, err)
	assert.True(t, sealed[0].Time.Equal(now))
	assert.Equal(t, time.UTC, sealed[0].Time.Location())
	assert.True(t, sealed[1].Time.Equal(own))
	assert.Equal(t, time.UTC, sealed[1].Time.Location())
	assert.Contains(t, string(lines[0]), `"time":"2025-06-01T14:00:00Z"`)
	assert.Equal(t, uint64(1), sealed[0].Seq)
	assert.Equal(t, GenesisPrev, sealed[0].Prev)
	assert.Equal(t, sealed[0].Hash, sealed[1].Prev)
}

func TestSealRefusals(t *testing.T) {
	good := []Record{{Kind: "k", Verdict: "v"}}
	tests := []struct {
		name     string
		seq      uint64
		hash     string
		recs     []Record
		want     error
		contains string
	}{
		{"seq 0 needs the genesis hash", 0, strings.Repeat("a", 64), good, ErrBadTail, ""},
		{"short hash", 3, "abc", good, ErrBadTail, ""},
		{"uppercase hash", 3, strings.Repeat("A", 64), good, ErrBadTail, ""},
		{"empty hash", 3, "", good, ErrBadTail, ""},
		{"empty kind", 0, GenesisPrev, []Record{{Kind: "k"}, {}}, ErrInvalidRecord, "record 2 of 2"},
		{"bad data", 0, GenesisPrev, []Record{{Kind: "k", Data: []byte("{")}}, ErrInvalidRecord, "record 1 of 1"},
		{"invalid UTF-8", 0, GenesisPrev, []Record{{Kind: "k", RunID: "\xff"}}, ErrInvalidRecord, ""},
		{"too large", 0, GenesisPrev, []Record{{Kind: "k", Reason: strings.Repeat("x", MaxRecordBytes)}}, ErrRecordTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed, lines, err := Seal(tt.seq, tt.hash, time.Now(), tt.recs)
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.contains)
			assert.Nil(t, sealed)
			assert.Nil(t, lines)
		})
	}
	sealed, lines, err := Seal(5, strings.Repeat("0", 64), time.Now(), nil)
	require.NoError(t, err)
	assert.Empty(t, sealed)
	assert.Empty(t, lines)
}

// joinLines makes a log file's content from lines.
func joinLines(lines [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestVerifyLines(t *testing.T) {
	var recs []Record
	for i := range 5 {
		recs = append(recs, sample(i))
	}
	sealed, lines, err := Seal(0, GenesisPrev, time.Now(), recs)
	require.NoError(t, err)
	content := joinLines(lines)
	last := sealed[4]
	head := Head{Seq: 5, Hash: last.Hash}

	errCheck := errors.New("column differs")
	tests := []struct {
		name    string
		content []byte
		head    Head
		opts    VerifyOptions
		reason  string // "" ok
		err     error  // an error returned as is
		records uint64
		torn    bool
	}{
		{name: "ok", content: content, head: head, records: 5},
		{name: "ok behind head", content: content, head: Head{Seq: 3, Hash: sealed[2].Hash}, records: 5},
		{name: "empty with genesis head", head: Head{Hash: GenesisPrev}},
		{name: "empty without head", head: Head{}},
		{name: "records without head", content: content, reason: ReasonHeadMissing, records: 5},
		{name: "bad head", content: content, head: Head{Seq: 5, Hash: "nope"}, reason: ReasonBadHead},
		{name: "seq 0 head with another hash", content: content, head: Head{Hash: last.Hash}, reason: ReasonBadHead},
		{name: "head mismatch", content: content, head: Head{Seq: 4, Hash: last.Hash}, reason: ReasonHeadMismatch, records: 5},
		{name: "truncated", content: joinLines(lines[:3]), head: head, reason: ReasonTruncated, records: 3},
		{name: "gap", content: joinLines(append(append([][]byte{}, lines[:2]...), lines[3:]...)), head: head, reason: ReasonSeqGap, records: 2},
		{name: "anchor", content: content, head: head, opts: VerifyOptions{Anchor: sealed[1].Hash}, records: 5},
		{name: "anchor missing", content: content, head: head, opts: VerifyOptions{Anchor: strings.Repeat("e", 64)}, reason: ReasonAnchorNotFound, records: 5},
		{name: "torn tail", content: append(bytes.Clone(content), `{"seq":6`...), head: head, records: 5, torn: true},
		{name: "torn tail refused", content: append(bytes.Clone(content), `{"seq":6`...), head: head, opts: VerifyOptions{NoTornTail: true}, reason: ReasonUnparsable, records: 5, torn: true},
		{name: "check refuses", content: content, head: head, opts: VerifyOptions{Check: func(r *Record) error {
			if r.Seq == 3 {
				return errCheck
			}
			return nil
		}}, err: errCheck, records: 2},
		{name: "check chain error gets its line", content: content, head: head, opts: VerifyOptions{Check: func(r *Record) error {
			if r.Seq == 4 {
				return &ChainError{Seq: 4, Reason: "column_mismatch"}
			}
			return nil
		}}, reason: "column_mismatch", records: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := VerifyLines(bytes.NewReader(tt.content), tt.head, tt.opts)
			switch {
			case tt.err != nil:
				require.ErrorIs(t, err, tt.err)
			case tt.reason != "":
				ce := requireChainError(t, err, tt.reason)
				assert.Empty(t, ce.Path)
				if tt.reason == ReasonSeqGap {
					assert.Equal(t, uint64(4), ce.Seq)
					assert.Equal(t, 3, ce.Line)
				}
				if tt.reason == "column_mismatch" {
					assert.Equal(t, 4, ce.Line)
				}
			default:
				require.NoError(t, err)
			}
			assert.Equal(t, tt.records, rep.Records)
			assert.Equal(t, tt.torn, rep.TornTail)
		})
	}

	_, err = VerifyLines(bytes.NewReader(content), head, VerifyOptions{Anchor: "short"})
	require.Error(t, err)
	assert.NotErrorAs(t, err, new(*ChainError), "a bad anchor is a usage error, not a broken chain")

	_, err = VerifyLines(iotestErrReader{}, head, VerifyOptions{})
	require.ErrorIs(t, err, errRead)
}

var errRead = errors.New("read failed")

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errRead }

// TestWriteHead: a log written line by line from Seal, with WriteHead,
// is a log Verify and Open accept.
func TestWriteHead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "export.jsonl")
	var recs []Record
	for i := range 4 {
		recs = append(recs, sample(i))
	}
	sealed, lines, err := Seal(0, GenesisPrev, time.Now(), recs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, joinLines(lines), 0o600))
	head := Head{Seq: 4, Hash: sealed[3].Hash}
	require.NoError(t, WriteHead(path, head))
	b, err := os.ReadFile(HeadPath(path))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`{"seq":4,"hash":"%s"}`+"\n", head.Hash), string(b))
	assert.Equal(t, string(AppendHead(nil, head)), string(b))
	_, err = os.Stat(HeadPath(path) + ".tmp")
	assert.ErrorIs(t, err, os.ErrNotExist)

	rep, err := Verify(path, VerifyOptions{Anchor: head.Hash})
	require.NoError(t, err)
	assert.Equal(t, uint64(4), rep.AnchorSeq)
	l := openLog(t, path)
	seq, hash := l.Last()
	assert.Equal(t, head, Head{Seq: seq, Hash: hash})

	require.Error(t, WriteHead(filepath.Join(dir, "missing", "x.jsonl"), head))
}

// FuzzVerifyLines: for any stream and head, VerifyLines agrees with
// Verify on the same bytes as a file, and a stream it accepts re-seals to
// itself: every accepted line is the line Seal makes for its record.
func FuzzVerifyLines(f *testing.F) {
	var recs []Record
	for i := range 4 {
		recs = append(recs, sample(i))
	}
	sealed, lines, err := Seal(0, GenesisPrev, time.Now(), recs)
	require.NoError(f, err)
	content := joinLines(lines)
	f.Add(content, uint64(4), sealed[3].Hash, false)
	f.Add(content, uint64(2), sealed[1].Hash, true)
	f.Add(content[:len(content)-9], uint64(4), sealed[3].Hash, true)
	f.Add([]byte(nil), uint64(0), GenesisPrev, false)
	f.Add(bytes.ReplaceAll(content, []byte("accepted"), []byte("rejected")), uint64(4), sealed[3].Hash, false)

	path := filepath.Join(f.TempDir(), "fuzz.jsonl")
	f.Fuzz(func(t *testing.T, content []byte, seq uint64, hash string, noTorn bool) {
		head := Head{Seq: seq, Hash: hash}
		var got []Record
		rep, err := VerifyLines(bytes.NewReader(content), head, VerifyOptions{NoTornTail: noTorn, Check: func(r *Record) error {
			got = append(got, *r)
			return nil
		}})
		require.Len(t, got, int(rep.Records))

		require.NoError(t, os.WriteFile(path, content, 0o640))
		if head == (Head{}) {
			// No head, as the zero Head says.
			if err := os.Remove(HeadPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		} else {
			require.NoError(t, os.WriteFile(HeadPath(path), AppendHead(nil, head), 0o640))
		}
		frep, ferr := Verify(path)
		if !noTorn || !rep.TornTail {
			require.Equal(t, err == nil, ferr == nil, "lines: %v, file: %v", err, ferr)
			require.Equal(t, rep, frep)
		}
		if err != nil {
			return
		}
		require.False(t, noTorn && rep.TornTail)
		resealed, relines, serr := Seal(0, GenesisPrev, time.Time{}, got)
		require.NoError(t, serr)
		require.Equal(t, got, resealed)
		want := joinLines(relines)
		require.True(t, bytes.Equal(want, content[:len(want)]), "accepted lines are Seal's")
	})
}
