package decisionlog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/internal/safefile"
)

// Cursor is the last record a receiver acknowledged: every record up to
// and including Seq is exported. The zero Cursor is "nothing yet".
type Cursor struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// ErrBadCursor is wrapped when a cursor file cannot be read as a Cursor.
var ErrBadCursor = errors.New("decisionlog: bad cursor file")

// maxCursorBytes caps a cursor file, which holds one short JSON object.
const maxCursorBytes = 4 << 10

// ReadCursor reads the cursor file at path; a missing file is the zero
// Cursor. A file that is not {"seq":N,"hash":"<64 hex>"} wraps ErrBadCursor.
// Untrusted bytes: the file may have been edited by hand.
func ReadCursor(path string) (Cursor, error) {
	b, err := safefile.ReadFile(path, maxCursorBytes)
	if errors.Is(err, os.ErrNotExist) {
		return Cursor{}, nil
	}
	if err != nil {
		return Cursor{}, fmt.Errorf("decisionlog: cursor: %w", err)
	}
	return decodeCursor(b)
}

func decodeCursor(b []byte) (Cursor, error) {
	var c Cursor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Cursor{}, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	if dec.More() {
		return Cursor{}, fmt.Errorf("%w: trailing data", ErrBadCursor)
	}
	if c.Seq == 0 && c.Hash == "" {
		return Cursor{}, nil
	}
	if c.Seq == 0 || !isHash(c.Hash) {
		return Cursor{}, fmt.Errorf("%w: seq %d hash %q", ErrBadCursor, c.Seq, c.Hash)
	}
	return c, nil
}

// writeCursor replaces the cursor file atomically: a temporary file,
// fsynced, renamed over the old one, then the directory fsynced. A crash
// leaves the old cursor or the new one; an old one only re-exports
// (at-least-once), never skips.
func writeCursor(path string, c Cursor) error {
	b := make([]byte, 0, 96)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, c.Seq, 10)
	b = append(b, `,"hash":"`...)
	b = append(b, c.Hash...)
	b = append(b, "\"}\n"...)
	if err := (safefile.Replace{TempSuffix: ".tmp"}).WriteFile(path, b, 0o640); err != nil {
		return fmt.Errorf("decisionlog: cursor %s: %w", path, err)
	}
	return nil
}

// isHash reports whether s is a lowercase hex SHA-256, as a chain hash is.
func isHash(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && len(s) == 64 && strings.ToLower(s) == s
}
