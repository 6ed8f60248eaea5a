package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/gatehost/gatehost/internal/safefile"
)

// Reasons a chain fails verification: stable, snake_case codes carried in
// ChainError.Reason.
const (
	// ReasonUnparsable: a line (not the torn final one) is not a record.
	ReasonUnparsable = "unparsable_line"
	// ReasonNonCanonical: a line decodes, but is not byte-for-byte the
	// canonical encoding of what it decodes to.
	ReasonNonCanonical = "non_canonical"
	// ReasonBadHash: a record's hash does not match its content.
	ReasonBadHash = "bad_hash"
	// ReasonSeqGap: a record's seq is not one more than the previous one's.
	ReasonSeqGap = "seq_gap"
	// ReasonPrevMismatch: a record's prev is not the previous record's hash.
	ReasonPrevMismatch = "prev_mismatch"
	// ReasonTruncated: the log ends before the seq its head names.
	ReasonTruncated = "truncated_below_head"
	// ReasonHeadMismatch: the record at the head's seq has another hash.
	ReasonHeadMismatch = "head_mismatch"
	// ReasonHeadMissing: the log has records but no head file.
	ReasonHeadMissing = "head_missing"
	// ReasonBadHead: the head file cannot be read as a checkpoint.
	ReasonBadHead = "bad_head"
	// ReasonAnchorNotFound: no record on the chain has the anchor hash.
	ReasonAnchorNotFound = "anchor_not_found"
)

// ChainError reports where and why a log failed verification.
type ChainError struct {
	Path   string // the log file
	Seq    uint64 // the seq expected or involved; 0 if none applies
	Line   int    // 1-based line in the log file; 0 for head and anchor checks
	Reason string // one of the Reason constants
	Detail string // human-readable context; not stable
}

func (e *ChainError) Error() string {
	msg := "eventlog: "
	if e.Path != "" {
		msg += e.Path + ": "
	}
	msg += "chain broken: " + e.Reason
	if e.Line > 0 {
		msg += fmt.Sprintf(" at line %d", e.Line)
	}
	if e.Seq > 0 {
		msg += fmt.Sprintf(" (seq %d)", e.Seq)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Report summarises a verified log.
type Report struct {
	Records   uint64 // complete records verified
	LastSeq   uint64 // seq of the last complete record; 0 if none
	LastHash  string // its hash; GenesisPrev if none
	TornTail  bool   // the file ends in a torn line, ignored by the check
	TornBytes int64  // size of that torn line
	HeadSeq   uint64 // seq named by the head file
	AnchorSeq uint64 // seq of the record matching VerifyOptions.Anchor
}

// VerifyOptions tunes Verify. The zero value checks the chain and the head.
type VerifyOptions struct {
	// Anchor, if set, is a record hash kept outside the log's reach (see the
	// package doc); Verify fails unless a record on the chain has it.
	Anchor string
	// Check, if set, is called with each record that verified, in order;
	// an error from it ends the verification and is returned as is. A
	// store that keeps fields of a record beside its line checks them here.
	Check func(*Record) error
	// NoTornTail treats an incomplete final line as unparsable rather than
	// as a torn write: for stores that commit whole lines atomically.
	NoTornTail bool
}

// Verify checks the log at path and its head file without modifying either.
// It returns a *ChainError if the chain is broken, together with a Report
// of the part that verified. At most one VerifyOptions may be given.
func Verify(path string, opts ...VerifyOptions) (Report, error) {
	var o VerifyOptions
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		return Report{}, errors.New("eventlog: Verify takes at most one VerifyOptions")
	}
	if err := o.check(); err != nil {
		return Report{}, err
	}
	// The head first: appends only ever move the log ahead of it.
	head, _, err := readHead(headPath(path))
	if err != nil {
		return Report{}, withPath(err, path)
	}
	f, err := safefile.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("eventlog: %w", err) // names the file
	}
	defer f.Close()
	rep, err := VerifyLines(f, head, o)
	return rep, withPath(err, path)
}

// VerifyLines checks a log read from r — lines as a log file holds them,
// each the canonical encoding of a record followed by "\n" — against its
// head checkpoint, as Verify checks a file: for another store's log, or
// one exported from it. The zero Head means there is none (a log with
// records then fails with ReasonHeadMissing); an invalid one fails with
// ReasonBadHead. Read the head before the lines if the log is being
// appended to. It returns a *ChainError if the chain is broken (or the
// error of opts.Check, or of r, as is), with a Report of the part that
// verified.
func VerifyLines(r io.Reader, head Head, opts VerifyOptions) (Report, error) {
	if err := opts.check(); err != nil {
		return Report{}, err
	}
	haveHead := head != Head{}
	if haveHead && !head.valid() {
		return Report{}, head.badHead()
	}
	var headHash string
	var anchorSeq uint64
	res, err := scan(r, func(rec *Record) error {
		if rec.Seq == head.Seq {
			headHash = rec.Hash
		}
		if opts.Anchor != "" && rec.Hash == opts.Anchor {
			anchorSeq = rec.Seq
		}
		if opts.Check != nil {
			return opts.Check(rec)
		}
		return nil
	})
	rep := res.report()
	rep.HeadSeq = head.Seq
	rep.AnchorSeq = anchorSeq
	if err == nil && res.torn && opts.NoTornTail {
		err = &ChainError{Seq: res.records + 1, Line: int(res.records) + 1, Reason: ReasonUnparsable, Detail: "incomplete final line"}
	}
	if err == nil {
		err = checkHead(res, head, haveHead, headHash)
	}
	if err == nil && opts.Anchor != "" && anchorSeq == 0 {
		err = &ChainError{Reason: ReasonAnchorNotFound, Detail: opts.Anchor}
	}
	return rep, err
}

func (o VerifyOptions) check() error {
	if o.Anchor != "" && !isHash(o.Anchor) {
		return fmt.Errorf("eventlog: anchor %q is not a lowercase hex SHA-256", o.Anchor)
	}
	return nil
}

// withPath names the log in a *ChainError, and in other errors by wrapping.
func withPath(err error, path string) error {
	var ce *ChainError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		ce.Path = path
		return ce
	default:
		return fmt.Errorf("eventlog: %s: %w", path, err)
	}
}

type scanResult struct {
	records   uint64
	lastHash  string
	goodEnd   int64 // file offset just past the last complete record
	torn      bool
	tornBytes int64
}

func (s scanResult) report() Report {
	h := s.lastHash
	if h == "" {
		h = GenesisPrev
	}
	return Report{Records: s.records, LastSeq: s.records, LastHash: h, TornTail: s.torn, TornBytes: s.tornBytes}
}

// scan reads a log from its start, checking every complete line and calling
// visit for each valid record. A torn final line ends the scan without error;
// an error from visit ends it with that error (a *ChainError given the line).
func scan(r io.Reader, visit func(*Record) error) (scanResult, error) {
	res := scanResult{lastHash: GenesisPrev}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	var scratch []byte
	for lineNo := 1; ; lineNo++ {
		var terminated bool
		var err error
		buf, terminated, err = readLine(br, buf[:0])
		switch {
		case errors.Is(err, errLineTooLong):
			return res, &ChainError{Seq: res.records + 1, Line: lineNo, Reason: ReasonUnparsable,
				Detail: fmt.Sprintf("line exceeds %d bytes", MaxRecordBytes)}
		case err != nil:
			return res, fmt.Errorf("read: %w", err)
		}
		if len(buf) == 0 {
			return res, nil // clean EOF
		}
		if !terminated {
			res.torn, res.tornBytes = true, int64(len(buf))
			return res, nil
		}
		body := buf[:len(buf)-1]

		var rec Record
		if err := json.Unmarshal(body, &rec); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				if _, perr := br.Peek(1); perr == io.EOF {
					res.torn, res.tornBytes = true, int64(len(buf))
					return res, nil
				}
			}
			return res, &ChainError{Seq: res.records + 1, Line: lineNo, Reason: ReasonUnparsable, Detail: err.Error()}
		}
		if ce := checkRecord(&rec, body, res.records, res.lastHash, &scratch); ce != nil {
			ce.Line = lineNo
			return res, ce
		}
		if visit != nil {
			if err := visit(&rec); err != nil {
				var ce *ChainError
				if errors.As(err, &ce) && ce.Line == 0 {
					ce.Line = lineNo
				}
				return res, err
			}
		}
		res.records++
		res.lastHash = rec.Hash
		res.goodEnd += int64(len(buf))
	}
}

// checkRecord checks one decoded record against its line and its predecessor.
// Hash before canonical form: an edited value then reads as bad_hash,
// while a re-formatted but otherwise intact line reads as non_canonical.
func checkRecord(rec *Record, body []byte, lastSeq uint64, prev string, scratch *[]byte) *ChainError {
	if !utf8.Valid(body) {
		return &ChainError{Seq: rec.Seq, Reason: ReasonNonCanonical, Detail: "invalid UTF-8"}
	}
	want, hash, err := appendLine((*scratch)[:0], rec)
	*scratch = want
	if err != nil {
		return &ChainError{Seq: rec.Seq, Reason: ReasonNonCanonical, Detail: err.Error()}
	}
	if rec.Hash != hash {
		return &ChainError{Seq: rec.Seq, Reason: ReasonBadHash, Detail: fmt.Sprintf("stored %q, computed %s", rec.Hash, hash)}
	}
	if !bytes.Equal(want, body) {
		return &ChainError{Seq: rec.Seq, Reason: ReasonNonCanonical, Detail: "line differs from its canonical encoding"}
	}
	if rec.Seq != lastSeq+1 {
		return &ChainError{Seq: rec.Seq, Reason: ReasonSeqGap, Detail: fmt.Sprintf("want seq %d", lastSeq+1)}
	}
	if rec.Prev != prev {
		return &ChainError{Seq: rec.Seq, Reason: ReasonPrevMismatch, Detail: fmt.Sprintf("prev %s, previous record's hash %s", rec.Prev, prev)}
	}
	return nil
}

var errLineTooLong = errors.New("line too long")

// readLine appends the next line, newline included, to buf. terminated
// reports whether it ended in a newline; an empty result means EOF.
func readLine(br *bufio.Reader, buf []byte) (line []byte, terminated bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxRecordBytes+1 {
			return buf, false, errLineTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return buf, false, nil
		default:
			return buf, false, err
		}
	}
}

// Head is a head checkpoint: the seq and hash of a log's last record
// (0 and GenesisPrev for an empty log). A file log keeps it in <path>.head
// (see HeadPath) as {"seq":N,"hash":"…"} and a newline.
type Head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// valid reports whether h can be a log's head.
func (h Head) valid() bool { return isHash(h.Hash) && (h.Seq > 0 || h.Hash == GenesisPrev) }

func (h Head) badHead() *ChainError {
	return &ChainError{Reason: ReasonBadHead, Detail: fmt.Sprintf("invalid checkpoint seq %d hash %q", h.Seq, h.Hash)}
}

// AppendHead appends h as a head file holds it, newline included.
func AppendHead(dst []byte, h Head) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, h.Seq, 10)
	dst = append(dst, `,"hash":"`...)
	dst = append(dst, h.Hash...)
	return append(dst, "\"}\n"...)
}

// HeadPath returns the path of the head file of the log at logPath.
func HeadPath(logPath string) string { return headPath(logPath) }

func headPath(logPath string) string { return logPath + ".head" }

// maxHeadBytes caps the head file, which holds one short JSON object.
const maxHeadBytes = 4 << 10

// readHead reads the head file. A missing file is not an error (have is
// false); a malformed one is a *ChainError, since it may be tampering.
func readHead(path string) (cp Head, have bool, err error) {
	b, err := safefile.ReadFile(path, maxHeadBytes)
	if errors.Is(err, os.ErrNotExist) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, fmt.Errorf("read head: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cp); err != nil {
		return Head{}, false, &ChainError{Reason: ReasonBadHead, Detail: err.Error()}
	}
	if dec.More() {
		return Head{}, false, &ChainError{Reason: ReasonBadHead, Detail: "trailing data"}
	}
	if !cp.valid() {
		return Head{}, false, cp.badHead()
	}
	return cp, true, nil
}

// checkHead compares the scanned chain with the head; headHash is the hash of
// the record at head.Seq, if the scan reached it.
func checkHead(res scanResult, head Head, have bool, headHash string) error {
	switch {
	case !have:
		if res.records > 0 {
			return &ChainError{Reason: ReasonHeadMissing, Detail: fmt.Sprintf("log has %d records", res.records)}
		}
	case head.Seq > res.records:
		return &ChainError{Seq: head.Seq, Reason: ReasonTruncated,
			Detail: fmt.Sprintf("log ends at seq %d, head names seq %d", res.records, head.Seq)}
	case head.Seq > 0 && headHash != head.Hash:
		return &ChainError{Seq: head.Seq, Reason: ReasonHeadMismatch,
			Detail: fmt.Sprintf("head hash %s, record hash %s", head.Hash, headHash)}
	}
	return nil
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
