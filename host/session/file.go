package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/gatehost/gatehost/internal/safefile"
)

// MaxFileBytes caps a session file.
const MaxFileBytes = 64 << 20

// fileFormat is the version of FileStore's JSON document.
const fileFormat = 1

// FileStore is a Store in one JSON file,
//
//	{"format": 1, "sessions": {"<id>": Set, ...}}
//
// so that sessions survive restarts of the CLI. Every Update re-reads the
// file under an exclusive lock on "<path>.lock" (flock, where the platform
// has it), applies the change and replaces the file atomically (write to a
// temporary file, fsync, rename, fsync the directory). A file that does not
// exist is an empty store; one that cannot be read or decoded, or holds an
// entry inconsistent with its key, is an ErrStore error, never an empty
// store.
//
// Load and IDs read the file on every call, so that another process's
// Update is seen at once (a revocation, above all), but decode it only when
// its bytes differ from the last ones this FileStore decoded or wrote:
// comparing bytes costs a fraction of decoding and validating every
// session, and holds for any change, however made.
type FileStore struct {
	path string
	// updating serialises this process's Updates: a slot, so that an
	// Update waiting for another gives up when its context ends.
	updating chan struct{}

	cacheMu sync.Mutex
	raw     []byte          // the file's bytes that sets was decoded from
	sets    map[string]*Set // shared, never modified: replaced whole
}

// NewFileStore returns a FileStore at path. It touches nothing on disk.
func NewFileStore(path string) *FileStore {
	return &FileStore{path: path, updating: make(chan struct{}, 1)}
}

// Path returns the file's path.
func (f *FileStore) Path() string { return f.path }

type document struct {
	Format   int             `json:"format"`
	Sessions map[string]*Set `json:"sessions"`
}

// read returns the file's sessions. The map and its sets are shared with
// other callers: read them, never modify them.
func (f *FileStore) read() (map[string]*Set, error) {
	fail := func(err error) (map[string]*Set, error) {
		return nil, &Error{Op: "load", Code: codes[ErrStore], Err: fmt.Errorf("%w: %s: %w", ErrStore, f.path, err)}
	}
	// A named pipe or device at the path is refused, never waited on.
	data, err := safefile.ReadFile(f.path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*Set{}, nil
	}
	if err != nil {
		return fail(err)
	}
	f.cacheMu.Lock()
	if f.sets != nil && bytes.Equal(data, f.raw) {
		sets := f.sets
		f.cacheMu.Unlock()
		return sets, nil
	}
	f.cacheMu.Unlock()
	sets, err := decodeDocument(data)
	if err != nil {
		return fail(err)
	}
	f.remember(data, sets)
	return sets, nil
}

// remember keeps sets as the decoding of data.
func (f *FileStore) remember(data []byte, sets map[string]*Set) {
	f.cacheMu.Lock()
	f.raw, f.sets = data, sets
	f.cacheMu.Unlock()
}

// decodeDocument decodes and checks a session file's bytes.
func decodeDocument(data []byte) (map[string]*Set, error) {
	var doc document
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if doc.Format != fileFormat {
		return nil, fmt.Errorf("format %d, want %d", doc.Format, fileFormat)
	}
	if doc.Sessions == nil {
		doc.Sessions = map[string]*Set{}
	}
	for id, s := range doc.Sessions {
		if s == nil || s.ID != id || !ValidID(id) {
			return nil, fmt.Errorf("entry %q is not a session set with that id", cut(id))
		}
		for tool, a := range s.Activated {
			if a.Grant.Session != id || a.Grant.Tool != tool {
				return nil, fmt.Errorf("session %q: the grant under %q covers session %q, tool %q", cut(id), cut(tool), cut(a.Grant.Session), cut(a.Grant.Tool))
			}
		}
	}
	return doc.Sessions, nil
}

func (f *FileStore) write(sets map[string]*Set) error {
	data, err := json.MarshalIndent(document{Format: fileFormat, Sessions: sets}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data = append(data, '\n')
	if err := safefile.WriteFileAtomic(f.path, data, 0o600); err != nil {
		return err
	}
	f.remember(data, sets)
	return nil
}

// lock takes the cross-process lock, waiting while another process holds
// it until ctx ends (a process stopped while holding it must not hold every
// other writer for ever); the returned function releases it.
func (f *FileStore) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return nil, err
	}
	lf, err := safefile.OpenFile(f.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := filelock.LockContext(ctx, lf); err != nil {
		lf.Close()
		if errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("%s.lock: %w: %w", f.path, err, context.Cause(ctx))
		}
		return nil, err
	}
	return func() { lf.Close() }, nil
}

// Load implements Store.
func (f *FileStore) Load(_ context.Context, id string) (*Set, error) {
	sets, err := f.read()
	if err != nil {
		return nil, err
	}
	return sets[id].Clone(), nil
}

// IDs implements Store.
func (f *FileStore) IDs(context.Context) ([]string, error) {
	sets, err := f.read()
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(sets)), nil
}

// turn takes this process's update slot: at once when it is free (as
// filelock.LockContext tries the lock first), else when the Update holding
// it ends, unless ctx ends first.
func (f *FileStore) turn(ctx context.Context) error {
	select {
	case f.updating <- struct{}{}:
		return nil
	default:
	}
	select {
	case f.updating <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another update: %w", context.Cause(ctx))
	}
}

// Update implements Store.
func (f *FileStore) Update(ctx context.Context, id string, fn func(*Set) (*Set, error)) (*Set, error) {
	storeErr := func(err error) error {
		return &Error{Op: "save", Session: cut(id), Code: codes[ErrStore], Err: fmt.Errorf("%w: %s: %w", ErrStore, f.path, err)}
	}
	if err := f.turn(ctx); err != nil {
		return nil, storeErr(err)
	}
	defer func() { <-f.updating }()
	unlock, err := f.lock(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	defer unlock()
	shared, err := f.read()
	if err != nil {
		return nil, err
	}
	next, err := fn(shared[id].Clone())
	if err != nil {
		return nil, err
	}
	sets := maps.Clone(shared) // the sets stay shared: only entries are replaced
	if next == nil {
		delete(sets, id)
	} else {
		sets[id] = next.Clone()
	}
	if err := f.write(sets); err != nil {
		return nil, storeErr(err)
	}
	return next.Clone(), nil
}
