package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// MaxRecordBytes caps the canonical encoding of one record (its line without
// the newline). It bounds the memory a reader needs per line and keeps one
// runaway evidence blob from bloating the log.
const MaxRecordBytes = 4 << 20

// GenesisPrev is the prev of the first record: the hash "before" the log.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// Record kinds written by the host. Other non-empty kinds are allowed.
const (
	KindStage    = "stage"
	KindDecision = "decision"
	// KindRepair is written by Open after it truncated a torn tail; its
	// data is {"bytes_dropped":N,"after_seq":S}.
	KindRepair = "repair"
)

// Record is one line of the log. Append fills Seq, Prev, Hash and, when zero,
// Time; whatever the caller put in Seq, Prev or Hash is ignored.
type Record struct {
	Seq          uint64          `json:"seq"`
	Time         time.Time       `json:"time"`
	Prev         string          `json:"prev"`
	Hash         string          `json:"hash"`
	Kind         string          `json:"kind"`
	RunID        string          `json:"run_id"`
	Pipeline     string          `json:"pipeline"`
	Stage        string          `json:"stage,omitempty"`
	Plugin       string          `json:"plugin,omitempty"`
	ModuleSHA256 string          `json:"module_sha256,omitempty"`
	ConfigDigest string          `json:"config_digest,omitempty"`
	ABIVersion   int             `json:"abi_version,omitempty"`
	Verdict      string          `json:"verdict"`
	Reason       string          `json:"reason,omitempty"`
	RequestID    string          `json:"request_id,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
}

// ErrInvalidRecord is wrapped by errors for records that cannot be encoded
// canonically (empty kind, invalid UTF-8, invalid data JSON, a time outside
// years 0–9999).
var ErrInvalidRecord = errors.New("eventlog: invalid record")

// ErrRecordTooLarge is wrapped when a record's line would exceed MaxRecordBytes.
var ErrRecordTooLarge = errors.New("eventlog: record exceeds MaxRecordBytes")

const hashMemberLen = len(`,"hash":""`) + sha256.Size*2

// appendLine appends the canonical encoding of r (see the package doc) to dst,
// with the hash member set to the hash it computes, and returns that hash.
// r.Hash is not read. It does not append a newline.
func appendLine(dst []byte, r *Record) ([]byte, string, error) {
	if r.Kind == "" {
		return dst, "", fmt.Errorf("%w: empty kind", ErrInvalidRecord)
	}
	if y := r.Time.UTC().Year(); y < 0 || y > 9999 {
		// RFC 3339 has four-digit years; anything else would not parse back.
		return dst, "", fmt.Errorf("%w: time %v out of range", ErrInvalidRecord, r.Time)
	}
	start := len(dst)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, r.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = r.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	var err error
	if dst, err = appendMember(dst, "prev", r.Prev, false); err != nil {
		return dst[:start], "", err
	}
	split := len(dst) // the hash member goes here
	members := [...]struct {
		name, value string
		omitEmpty   bool
	}{
		{"kind", r.Kind, false},
		{"run_id", r.RunID, false},
		{"pipeline", r.Pipeline, false},
		{"stage", r.Stage, true},
		{"plugin", r.Plugin, true},
		{"module_sha256", r.ModuleSHA256, true},
		{"config_digest", r.ConfigDigest, true},
	}
	for _, m := range members {
		if dst, err = appendMember(dst, m.name, m.value, m.omitEmpty); err != nil {
			return dst[:start], "", err
		}
	}
	if r.ABIVersion != 0 {
		dst = append(dst, `,"abi_version":`...)
		dst = strconv.AppendInt(dst, int64(r.ABIVersion), 10)
	}
	for _, m := range [...]struct {
		name, value string
		omitEmpty   bool
	}{
		{"verdict", r.Verdict, false},
		{"reason", r.Reason, true},
		{"request_id", r.RequestID, true},
	} {
		if dst, err = appendMember(dst, m.name, m.value, m.omitEmpty); err != nil {
			return dst[:start], "", err
		}
	}
	if len(r.Data) > 0 {
		if !utf8.Valid(r.Data) {
			return dst[:start], "", fmt.Errorf("%w: data is not valid UTF-8", ErrInvalidRecord)
		}
		dst = append(dst, `,"data":`...)
		buf := bytes.NewBuffer(dst)
		if err := json.Compact(buf, r.Data); err != nil {
			return dst[:start], "", fmt.Errorf("%w: data: %w", ErrInvalidRecord, err)
		}
		dst = buf.Bytes()
	}
	dst = append(dst, '}')

	sum := sha256.Sum256(dst[start:])
	hash := hex.EncodeToString(sum[:])

	// Insert the hash member at split: grow, shift the tail, fill the gap.
	n := len(dst)
	dst = append(dst, make([]byte, hashMemberLen)...)
	copy(dst[split+hashMemberLen:], dst[split:n])
	copy(dst[split:], `,"hash":"`+hash+`"`)
	return dst, hash, nil
}

func appendMember(dst []byte, name, value string, omitEmpty bool) ([]byte, error) {
	if omitEmpty && value == "" {
		return dst, nil
	}
	if !utf8.ValidString(value) {
		return dst, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidRecord, name)
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendString(dst, value), nil
}

// appendString writes s as a JSON string with the minimal escaping the
// package doc specifies; it is simpler to reimplement than encoding/json's.
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// ErrBadTail is wrapped by Seal when the tail it chains from is not a
// valid head: a hash other than 64 lowercase hex digits, or seq 0 with a
// hash other than GenesisPrev.
var ErrBadTail = errors.New("eventlog: invalid chain tail")

// Seal completes recs as the records following the chain's tail (prevSeq,
// prevHash) — seq prevSeq+1…, each prev the hash before it, a zero time set
// to now, every time in UTC — and returns them with their lines: each the
// canonical encoding (see the package doc), without the newline. It is how
// Log.Append chains and encodes, for other stores of the same log: their
// lines are byte-for-byte the lines a file log holds for the same records.
// recs is not modified.
//
// Errors wrap ErrInvalidRecord or ErrRecordTooLarge (naming the record, by
// its 1-based index in recs) or ErrBadTail; no records are returned then.
func Seal(prevSeq uint64, prevHash string, now time.Time, recs []Record) (sealed []Record, lines [][]byte, err error) {
	if !(Head{Seq: prevSeq, Hash: prevHash}).valid() {
		return nil, nil, fmt.Errorf("%w: seq %d hash %q", ErrBadTail, prevSeq, prevHash)
	}
	if len(recs) == 0 {
		return nil, nil, nil
	}
	ends := make([]int, 0, len(recs))
	buf, sealed, err := seal(nil, prevSeq, prevHash, now, recs, &ends)
	if err != nil {
		return nil, nil, err
	}
	lines = make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		lines[i] = buf[start:end:end]
		start = end + 1 // past the newline
	}
	return sealed, lines, nil
}

// seal appends to dst the lines of recs chained after (prevSeq, prevHash),
// each followed by a newline, and returns the completed records; ends, if
// non-nil, receives each line's end offset in the result (its newline's).
// On error dst is returned as it was given.
func seal(dst []byte, prevSeq uint64, prevHash string, now time.Time, recs []Record, ends *[]int) ([]byte, []Record, error) {
	mark := len(dst)
	seq, prev := prevSeq, prevHash
	out := make([]Record, len(recs))
	for i, r := range recs {
		seq++
		r.Seq, r.Prev, r.Hash = seq, prev, ""
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Time = r.Time.UTC()
		start := len(dst)
		var err error
		dst, r.Hash, err = appendLine(dst, &r)
		if err == nil && len(dst)-start > MaxRecordBytes {
			err = fmt.Errorf("%w: %d bytes", ErrRecordTooLarge, len(dst)-start)
		}
		if err != nil {
			return dst[:mark], nil, fmt.Errorf("eventlog: record %d of %d: %w", i+1, len(recs), err)
		}
		if ends != nil {
			*ends = append(*ends, len(dst))
		}
		dst = append(dst, '\n')
		prev = r.Hash
		out[i] = r
	}
	return dst, out, nil
}
