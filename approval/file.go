package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/gatehost/gatehost/internal/safefile"
)

// FileVersion is the version of the approvals file.
const FileVersion = 1

// MaxFileBytes bounds an approvals file: DefaultMaxOutstanding approvals
// take about 4 MiB. A larger file is refused (ErrStore), and a write that
// would make one fails with ErrFull.
const MaxFileBytes = 16 << 20

// File is the Store kept in one JSON file, shared by the gatehost
// processes of one machine (`gatehost serve` minting, `gatehost mcp`
// presenting). Every operation takes an exclusive flock of the sidecar
// file PATH.lock, reads the file, applies its change and replaces the
// file atomically (a temporary file renamed over it), so that Add and
// Take are atomic across processes. A missing file is an empty store; its
// directory must exist. The file is read through internal/safefile (a
// named pipe or device is refused), at most MaxFileBytes; one that is not
// a valid approvals file fails every operation (ErrStore) until it is
// removed or repaired: the store fails closed.
type File struct{ path string }

// OpenFile returns the Store kept in the file at path, after checking
// that its directory exists and that the file, if any, reads.
func OpenFile(path string) (*File, error) {
	if strings.TrimSpace(path) == "" {
		return nil, fmt.Errorf("%w: approvals file: no path", ErrStore)
	}
	if err := safefile.CheckDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("%w: approvals file %s: directory: %w", ErrStore, path, err)
	}
	f := &File{path: path}
	if _, err := f.read(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Add implements Store.
func (f *File) Add(ctx context.Context, a Approval, now time.Time, max int) error {
	return f.update(ctx, func(t table) (bool, error) {
		if err := t.add(a, now, max); err != nil {
			return false, err
		}
		return true, nil
	})
}

// Take implements Store.
func (f *File) Take(ctx context.Context, id string, now time.Time) (Stored, bool, error) {
	var s Stored
	var found bool
	err := f.update(ctx, func(t table) (bool, error) {
		s, found = t.take(id, now)
		return found, nil
	})
	if err != nil {
		return Stored{}, false, err
	}
	return s, found, nil
}

// update runs fn on the file's table under the lock and writes the table
// back when fn says it changed it.
func (f *File) update(ctx context.Context, fn func(table) (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	lockPath := f.path + ".lock"
	lf, err := safefile.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("%w: approvals lock: %w", ErrStore, err)
	}
	defer lf.Close() // releases the lock
	if err := filelock.LockContext(ctx, lf); err != nil {
		return fmt.Errorf("%w: approvals lock %s: %w", ErrStore, lockPath, errors.Join(err, context.Cause(ctx)))
	}
	t, err := f.read()
	if err != nil {
		return err
	}
	changed, err := fn(t)
	if err != nil || !changed {
		return err
	}
	data, err := marshalTable(t)
	if err != nil {
		return err
	}
	if len(data) > MaxFileBytes {
		return fmt.Errorf("%w: approvals file %s would be %d bytes, more than the %d allowed", ErrFull, f.path, len(data), MaxFileBytes)
	}
	if err := safefile.WriteFileAtomic(f.path, data, 0o600); err != nil {
		return fmt.Errorf("%w: approvals file %s: write: %w", ErrStore, f.path, err)
	}
	return nil
}

// fileDoc is the file's document.
type fileDoc struct {
	Version   int      `json:"version"`
	Approvals []Stored `json:"approvals"`
}

// read reads the table; a missing file is an empty one.
func (f *File) read() (table, error) {
	data, err := safefile.ReadFile(f.path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return table{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: approvals file: %w", ErrStore, err)
	}
	var doc fileDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: approvals file %s: %w", ErrStore, f.path, err)
	}
	if doc.Version != FileVersion {
		return nil, fmt.Errorf("%w: approvals file %s: version %d, want %d", ErrStore, f.path, doc.Version, FileVersion)
	}
	t := make(table, len(doc.Approvals))
	for i, s := range doc.Approvals {
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("%w: approvals file %s: approvals[%d]: %w", ErrStore, f.path, i, err)
		}
		if _, dup := t[s.ID]; dup {
			return nil, fmt.Errorf("%w: approvals file %s: approvals[%d]: id %s twice", ErrStore, f.path, i, s.ID)
		}
		t[s.ID] = s
	}
	return t, nil
}

// marshalTable is the file form of t: approvals sorted by id.
func marshalTable(t table) ([]byte, error) {
	doc := fileDoc{Version: FileVersion, Approvals: make([]Stored, 0, len(t))}
	for _, s := range t {
		doc.Approvals = append(doc.Approvals, s)
	}
	slices.SortFunc(doc.Approvals, func(a, b Stored) int { return strings.Compare(a.ID, b.ID) })
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return append(data, '\n'), nil
}
