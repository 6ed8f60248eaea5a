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
	return f.update(ctx, func(st fileState) (bool, error) {
		if err := st.t.add(a, now, max); err != nil {
			return false, err
		}
		return true, nil
	})
}

// Take implements Store.
func (f *File) Take(ctx context.Context, id string, now time.Time) (Stored, bool, error) {
	var s Stored
	var found bool
	err := f.update(ctx, func(st fileState) (bool, error) {
		s, found = st.t.take(id, now)
		return found, nil
	})
	if err != nil {
		return Stored{}, false, err
	}
	return s, found, nil
}

// fileState is what the file holds: approvals and requests.
type fileState struct {
	t table
	r requestTable
}

// OpenRequest implements RequestStore.
func (f *File) OpenRequest(ctx context.Context, r Request, now time.Time, max int) (Request, bool, error) {
	var got Request
	var created bool
	err := f.update(ctx, func(st fileState) (bool, error) {
		swept := st.r.sweep(now)
		var err error
		got, created, err = st.r.open(r, now, max)
		return created || swept, err
	})
	return got, created, err
}

// Request implements RequestStore.
func (f *File) Request(ctx context.Context, id string, now time.Time) (Request, error) {
	st, err := f.snapshot(ctx)
	if err != nil {
		return Request{}, err
	}
	return st.r.get(id, now)
}

// Requests implements RequestStore.
func (f *File) Requests(ctx context.Context, now time.Time) ([]Request, error) {
	st, err := f.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return st.r.list(now), nil
}

// UpdateRequest implements RequestStore.
func (f *File) UpdateRequest(ctx context.Context, id string, now time.Time, change func(Request) (Request, error)) (Request, error) {
	var got Request
	err := f.update(ctx, func(st fileState) (bool, error) {
		var err error
		got, err = st.r.update(id, change)
		return err == nil, err
	})
	return got, err
}

// snapshot reads the file without changing it: atomic replacement means
// a reader sees a whole file.
func (f *File) snapshot(ctx context.Context) (fileState, error) {
	if err := ctx.Err(); err != nil {
		return fileState{}, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return f.read()
}

// update runs fn on the file's state under the lock and writes it back
// when fn says it changed it.
func (f *File) update(ctx context.Context, fn func(fileState) (bool, error)) error {
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
	st, err := f.read()
	if err != nil {
		return err
	}
	changed, err := fn(st)
	if err != nil || !changed {
		return err
	}
	data, err := marshalState(st)
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
	Version   int       `json:"version"`
	Approvals []Stored  `json:"approvals"`
	Requests  []Request `json:"requests,omitempty"`
}

// read reads the state; a missing file is an empty one.
func (f *File) read() (fileState, error) {
	data, err := safefile.ReadFile(f.path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{table{}, requestTable{}}, nil
	}
	if err != nil {
		return fileState{}, fmt.Errorf("%w: approvals file: %w", ErrStore, err)
	}
	st, err := decodeFile(data)
	if err != nil {
		return fileState{}, fmt.Errorf("%w: approvals file %s: %w", ErrStore, f.path, err)
	}
	return st, nil
}

// decodeFile decodes an approvals file's bytes, untrusted.
func decodeFile(data []byte) (fileState, error) {
	var doc fileDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return fileState{}, err
	}
	if dec.More() {
		return fileState{}, errors.New("data after the document")
	}
	if doc.Version != FileVersion {
		return fileState{}, fmt.Errorf("version %d, want %d", doc.Version, FileVersion)
	}
	st := fileState{make(table, len(doc.Approvals)), make(requestTable, len(doc.Requests))}
	for i, s := range doc.Approvals {
		if err := s.Check(); err != nil {
			return fileState{}, fmt.Errorf("approvals[%d]: %w", i, err)
		}
		if _, dup := st.t[s.ID]; dup {
			return fileState{}, fmt.Errorf("approvals[%d]: id %s twice", i, s.ID)
		}
		st.t[s.ID] = s
	}
	for i, r := range doc.Requests {
		if err := r.Check(); err != nil {
			return fileState{}, fmt.Errorf("requests[%d]: %w", i, err)
		}
		if _, dup := st.r[r.ID]; dup {
			return fileState{}, fmt.Errorf("requests[%d]: id %s twice", i, r.ID)
		}
		st.r[r.ID] = r
	}
	return st, nil
}

// marshalState is the file form of st: approvals and requests sorted by
// id.
func marshalState(st fileState) ([]byte, error) {
	doc := fileDoc{Version: FileVersion, Approvals: make([]Stored, 0, len(st.t))}
	for _, s := range st.t {
		doc.Approvals = append(doc.Approvals, s)
	}
	slices.SortFunc(doc.Approvals, func(a, b Stored) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range st.r {
		doc.Requests = append(doc.Requests, r)
	}
	slices.SortFunc(doc.Requests, func(a, b Request) int { return strings.Compare(a.ID, b.ID) })
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return append(data, '\n'), nil
}
