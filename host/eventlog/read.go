package eventlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gatehost/gatehost/internal/safefile"
)

// Position is where a read of a log stopped: just past the last complete
// record it read. A later read of the same file resumes there without
// reading (and verifying) again what came before. The zero Position is the
// start of the log.
type Position struct {
	// Offset is the number of bytes of the file before the next record.
	Offset int64
	// Seq is the seq of the last record read; 0 at the start.
	Seq uint64
	// Hash is that record's hash, the prev the next record must carry;
	// "" (meaning GenesisPrev) at the start.
	Hash string
}

// ErrPositionBeyondEnd is returned by ReadAfter when the file is shorter
// than the Position it was asked to resume from: the file was truncated or
// replaced since that Position was read.
var ErrPositionBeyondEnd = errors.New("eventlog: read position beyond the end of the log")

// ReadFrom streams to fn, in seq order, every record of the log at path
// whose seq is above afterSeq, verifying the whole chain from the first
// record as it reads (each line canonical, hash, seq and prev; see the
// package doc). It reads one line at a time, so its memory is bounded by
// MaxRecordBytes whatever the size of the log.
//
// It returns nil at the end of the log; a final line without its newline,
// or a final line that is not JSON, is taken as an append still being
// written and is not read. It returns fn's first error as is (fn may
// return a sentinel of its own to stop early), a *ChainError when the chain
// is broken, and a wrapped I/O error otherwise (os.ErrNotExist for a
// missing log). It never modifies the file and takes no lock, so it may run
// while a Log appends to the file. It does not check the head checkpoint:
// Verify does.
func ReadFrom(path string, afterSeq uint64, fn func(Record) error) error {
	_, err := ReadAfter(path, Position{}, afterSeq, fn)
	return err
}

// ReadAfter is ReadFrom resuming at from, a Position an earlier ReadAfter
// of the same file returned: the records before it are taken as verified
// then (the log is append-only), and the chain is verified from from.Hash
// on. It returns the Position after the last record it read and fn
// accepted, on error too, so that a read stopped by fn resumes at the
// record fn refused. A file shorter than from.Offset is ErrPositionBeyondEnd.
// Line numbers in a *ChainError count from from.Offset's line.
func ReadAfter(path string, from Position, afterSeq uint64, fn func(Record) error) (Position, error) {
	if from.Offset < 0 || (from.Offset == 0) != (from.Seq == 0) {
		return from, fmt.Errorf("eventlog: invalid read position %+v", from)
	}
	if from.Hash == "" {
		from.Hash = GenesisPrev
	}
	f, err := safefile.Open(path)
	if err != nil {
		return from, fmt.Errorf("eventlog: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return from, fmt.Errorf("eventlog: %s: %w", path, err)
	}
	if st.Size() < from.Offset {
		return from, fmt.Errorf("%w: %s has %d bytes, position %d", ErrPositionBeyondEnd, path, st.Size(), from.Offset)
	}
	if _, err := f.Seek(from.Offset, io.SeekStart); err != nil {
		return from, fmt.Errorf("eventlog: %s: %w", path, err)
	}
	pos, err := readRecords(f, 64<<10, from, afterSeq, fn)
	var ce *ChainError
	if errors.As(err, &ce) {
		ce.Path = path
	}
	return pos, err
}

// readRecords is ReadAfter's loop over an open file positioned at pos,
// reading through a buffer of bufSize bytes.
func readRecords(r io.Reader, bufSize int, pos Position, afterSeq uint64, fn func(Record) error) (Position, error) {
	br := bufio.NewReaderSize(r, bufSize)
	var buf, scratch []byte
	for lineNo := 1; ; lineNo++ {
		var terminated bool
		var err error
		buf, terminated, err = readLine(br, buf[:0])
		switch {
		case errors.Is(err, errLineTooLong):
			return pos, &ChainError{Seq: pos.Seq + 1, Line: lineNo, Reason: ReasonUnparsable,
				Detail: fmt.Sprintf("line exceeds %d bytes", MaxRecordBytes)}
		case err != nil:
			return pos, fmt.Errorf("eventlog: read: %w", err)
		case len(buf) == 0 || !terminated:
			return pos, nil // the end, or an append under way
		}
		body := buf[:len(buf)-1]
		var rec Record
		if err := json.Unmarshal(body, &rec); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				if _, perr := br.Peek(1); perr == io.EOF {
					return pos, nil // a torn tail: Open will repair it
				}
			}
			return pos, &ChainError{Seq: pos.Seq + 1, Line: lineNo, Reason: ReasonUnparsable, Detail: err.Error()}
		}
		if ce := checkRecord(&rec, body, pos.Seq, pos.Hash, &scratch); ce != nil {
			ce.Line = lineNo
			return pos, ce
		}
		if rec.Seq > afterSeq {
			if err := fn(rec); err != nil {
				return pos, err
			}
		}
		pos = Position{Offset: pos.Offset + int64(len(buf)), Seq: rec.Seq, Hash: rec.Hash}
	}
}
