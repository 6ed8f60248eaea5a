package baseline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/gatehost/gatehost/internal/safefile"
)

// FileVersion is the version of the file format Marshal writes and Parse
// reads.
const FileVersion = 1

// MaxFileBytes bounds a baseline file; a larger one is refused.
const MaxFileBytes = 64 << 20

// File is the Store kept in one JSON file (see Marshal for its form),
// meant to be reviewed and committed like a lock file. Writers on one
// machine, in this process or others, serialise on an exclusive flock of
// the sidecar file PATH.lock; each re-reads the file under the lock,
// applies its change and replaces the file atomically (a temporary file
// renamed over it). Load takes no lock and never sees a partial file; it
// re-reads the file only when it changed (another file at the path, or
// another size or modification time) and otherwise returns the Set it
// read last, so calling it for every tool call is cheap.
//
// A missing file is an empty baseline; its directory must exist. The file
// is read through internal/safefile (a named pipe or device is refused)
// and is at most MaxFileBytes. A file that is not a valid baseline, or
// holds an entry whose definition does not match its digest, fails every
// Load and every write with an error wrapping ErrInvalid until it is
// repaired: the baseline fails closed.
type File struct {
	path string

	mu sync.Mutex
	// cached is the file Load read last, kept open so that its inode
	// cannot be reused by a later file at the path: a file at the path
	// that is os.SameFile with it is the same file, unchanged unless its
	// size or modification time differ.
	cached *cachedFile
}

type cachedFile struct {
	f   *os.File
	fi  fs.FileInfo
	set *Set
}

// OpenFile returns the Store kept in the file at path and reads it once:
// an error wraps ErrStore when the directory does not exist or the file
// cannot be read, ErrInvalid when it is not a valid baseline. Close
// releases the descriptor the File keeps.
func OpenFile(path string) (*File, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: baseline file: no path", ErrInvalid)
	}
	dir := filepath.Dir(path)
	if err := safefile.CheckDir(dir); err != nil {
		return nil, fmt.Errorf("%w: baseline file %s: directory: %w", ErrStore, path, err)
	}
	f := &File{path: path}
	if _, err := f.Load(context.Background()); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Close releases the descriptor of the file read last. The File remains
// usable; its next Load reads the file again.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drop()
}

func (f *File) drop() error {
	if f.cached == nil {
		return nil
	}
	err := f.cached.f.Close()
	f.cached = nil
	return err
}

// Load implements Store.
func (f *File) Load(ctx context.Context) (*Set, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.read(false)
}

// read returns the file's baseline, from the cache unless the file
// changed or force is set. f.mu must be held.
func (f *File) read(force bool) (*Set, error) {
	fi, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f.missing()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: baseline file: %w", ErrStore, err)
	}
	if c := f.cached; !force && c != nil && os.SameFile(fi, c.fi) && fi.Size() == c.fi.Size() && fi.ModTime().Equal(c.fi.ModTime()) {
		return c.set, nil
	}
	file, err := safefile.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) { // removed since the stat
		return f.missing()
	}
	var serr *safefile.Error
	if errors.As(err, &serr) {
		return nil, fmt.Errorf("%w: baseline file: %w", ErrInvalid, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: baseline file: %w", ErrStore, err)
	}
	set, ofi, err := readOpen(f.path, file)
	if err != nil {
		file.Close()
		return nil, err
	}
	_ = f.drop()
	f.cached = &cachedFile{f: file, fi: ofi, set: set}
	return set, nil
}

// missing is read's answer when there is no file: an empty baseline if
// the directory exists.
func (f *File) missing() (*Set, error) {
	_ = f.drop()
	if err := safefile.CheckDir(filepath.Dir(f.path)); err != nil {
		return nil, fmt.Errorf("%w: baseline file %s: directory: %w", ErrStore, f.path, err)
	}
	return empty, nil
}

// readOpen reads and parses the open baseline file.
func readOpen(path string, file *os.File) (*Set, fs.FileInfo, error) {
	fi, err := file.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: baseline file: %w", ErrStore, err)
	}
	tooLarge := func(n int64) error {
		return fmt.Errorf("%w: baseline file %s: %d bytes, more than the %d allowed", ErrInvalid, path, n, MaxFileBytes)
	}
	if fi.Size() > MaxFileBytes {
		return nil, nil, tooLarge(fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(file, MaxFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: baseline file %s: %w", ErrStore, path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, nil, tooLarge(int64(len(data)))
	}
	set, err := Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("baseline file %s: %w", path, err)
	}
	return set, fi, nil
}

// AddIfAbsent implements Store.
func (f *File) AddIfAbsent(ctx context.Context, entries []Entry) (*Set, error) {
	entries, err := checkWrite(entries)
	if err != nil {
		return nil, err
	}
	return f.update(ctx, func(s *Set) *Set { return s.with(entries, false, nil) })
}

// Approve implements Store.
func (f *File) Approve(ctx context.Context, entries []Entry) (*Set, error) {
	entries, err := checkWrite(entries)
	if err != nil {
		return nil, err
	}
	return f.update(ctx, func(s *Set) *Set { return s.with(entries, true, nil) })
}

// Remove implements Store.
func (f *File) Remove(ctx context.Context, keys []Key) (*Set, error) {
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	return f.update(ctx, func(s *Set) *Set { return s.with(nil, false, keys) })
}

// update applies fn to the current baseline under the file lock and
// writes the result when it differs.
func (f *File) update(ctx context.Context, fn func(*Set) *Set) (*Set, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	lockPath := f.path + ".lock"
	lf, err := safefile.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: baseline lock: %w", ErrStore, err)
	}
	defer lf.Close() // releases the lock
	if err := filelock.LockContext(ctx, lf); err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			return nil, fmt.Errorf("%w: baseline lock %s: another writer holds it: %w", ErrStore, lockPath, cerr)
		}
		return nil, fmt.Errorf("%w: baseline lock %s: %w", ErrStore, lockPath, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Read in full under the lock: an edit in place within the
	// modification time's resolution must not be missed by a writer.
	cur, err := f.read(true)
	if err != nil {
		return nil, err
	}
	next := fn(cur)
	if next == cur {
		return cur, nil
	}
	data, err := Marshal(next)
	if err != nil {
		return nil, err
	}
	if err := safefile.WriteFileAtomic(f.path, data, 0o644); err != nil {
		return nil, fmt.Errorf("%w: baseline file %s: write: %w", ErrStore, f.path, err)
	}
	return next, nil
}

// fileDoc is the file's document.
type fileDoc struct {
	Version int         `json:"version"`
	Tools   []fileEntry `json:"tools"`
}

// fileEntry is Entry in the file, the definition last for reading.
type fileEntry struct {
	Upstream   string          `json:"upstream"`
	Tool       string          `json:"tool"`
	Digest     string          `json:"digest"`
	ApprovedBy string          `json:"approved_by"`
	ApprovedAt time.Time       `json:"approved_at"`
	Definition json.RawMessage `json:"definition"`
}

// Marshal returns the file form of s: one JSON document, indented by two
// spaces, ending in a newline,
//
//	{
//	  "version": 1,
//	  "tools": [
//	    {
//	      "upstream": "github",
//	      "tool": "create_issue",
//	      "digest": "…",
//	      "approved_by": "alice@example.com",
//	      "approved_at": "2026-01-02T03:04:05.123456Z",
//	      "definition": { … }
//	    }
//	  ]
//	}
//
// with the entries sorted by upstream, then tool, and each definition's
// canonical JSON (catalog.CanonicalJSON: members sorted) indented. The
// same baseline always gives the same bytes, so a change to the file is
// exactly a change to the baseline, and reviews as a diff.
func Marshal(s *Set) ([]byte, error) {
	doc := fileDoc{Version: FileVersion, Tools: make([]fileEntry, 0, s.Len())}
	for _, e := range s.Entries() {
		c, err := canonical(e.Definition)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, e.Key(), err)
		}
		doc.Tools = append(doc.Tools, fileEntry{
			Upstream: e.Upstream, Tool: e.Tool, Digest: e.Digest,
			ApprovedBy: e.ApprovedBy, ApprovedAt: e.ApprovedAt, Definition: c,
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return buf.Bytes(), nil
}

// Parse reads a baseline file's content (untrusted bytes): strict JSON
// (as catalog.CanonicalJSON defines it: no duplicate keys, valid UTF-8),
// the document Marshal writes with version FileVersion and no unknown
// fields, each entry valid (Entry.Validate: the definition must match its
// digest) and no key twice. Entries need not be sorted. Errors wrap
// ErrInvalid and name the line, and the entry when there is one. The
// definitions of the Set are canonical JSON.
func Parse(data []byte) (*Set, error) {
	fail := func(off int64, format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrInvalid, lineOf(data, off), fmt.Sprintf(format, args...))
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrInvalid, len(data), MaxFileBytes)
	}
	if _, err := catalog.CanonicalJSON(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fail(0, "not a baseline document (want a JSON object)")
	}
	var (
		version *int
		entries []Entry
		lines   []int
	)
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(off, "%v", err)
		}
		name, _ := tok.(string)
		switch name {
		case "version":
			if err := dec.Decode(&version); err != nil || version == nil {
				return nil, fail(off, "version: want an integer")
			}
		case "tools":
			off := dec.InputOffset()
			if tok, err := dec.Token(); err != nil || (tok != json.Delim('[') && tok != nil) {
				return nil, fail(off, "tools: want an array")
			} else if tok == nil {
				continue
			}
			for i := 0; dec.More(); i++ {
				off := skipSpace(data, dec.InputOffset())
				fe, err := decodeEntry(dec)
				if err != nil {
					return nil, fail(off, "tools[%d]: %v", i, err)
				}
				entries = append(entries, Entry{
					Upstream: fe.Upstream, Tool: fe.Tool, Digest: fe.Digest, Definition: fe.Definition,
					ApprovedBy: fe.ApprovedBy, ApprovedAt: fe.ApprovedAt,
				})
				lines = append(lines, lineOf(data, off))
			}
			if _, err := dec.Token(); err != nil {
				return nil, fail(dec.InputOffset(), "tools: %v", err)
			}
		default:
			return nil, fail(off, "unknown field %q", cut(name))
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(dec.InputOffset(), "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail(dec.InputOffset(), "data after the document")
	}
	switch {
	case version == nil:
		return nil, fail(0, "version: missing")
	case *version != FileVersion:
		return nil, fail(0, "version %d: this gatehost reads version %d", *version, FileVersion)
	}
	byKey := make(map[Key]int, len(entries))
	for i, e := range entries {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%w: line %d: tools[%d]: %w", ErrInvalid, lines[i], i, err)
		}
		if j, dup := byKey[e.Key()]; dup {
			return nil, fmt.Errorf("%w: line %d: tools[%d]: %s already at tools[%d]", ErrInvalid, lines[i], i, e.Key(), j)
		}
		byKey[e.Key()] = i
		c, _ := canonical(e.Definition) // checked by Validate
		entries[i].Definition = c
	}
	return NewSet(entries)
}

// entryFields are the members of an entry in the file.
var entryFields = map[string]bool{"upstream": true, "tool": true, "digest": true, "approved_by": true, "approved_at": true, "definition": true}

// decodeEntry decodes the next entry of the file. Member names must match
// exactly: encoding/json alone would take "Tool" for "tool", and a file
// holding both would read differently elsewhere.
func decodeEntry(dec *json.Decoder) (fileEntry, error) {
	var members map[string]json.RawMessage
	if err := dec.Decode(&members); err != nil {
		return fileEntry{}, err
	}
	if members == nil {
		return fileEntry{}, errors.New("want an object")
	}
	for name := range members {
		if !entryFields[name] {
			return fileEntry{}, fmt.Errorf("unknown field %q", cut(name))
		}
	}
	var fe fileEntry
	for _, f := range []struct {
		name string
		dst  any
	}{{"upstream", &fe.Upstream}, {"tool", &fe.Tool}, {"digest", &fe.Digest}, {"approved_by", &fe.ApprovedBy}, {"approved_at", &fe.ApprovedAt}} {
		if raw, ok := members[f.name]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return fileEntry{}, fmt.Errorf("%s: %v", f.name, err)
			}
		}
	}
	fe.Definition = members["definition"]
	return fe, nil
}

// lineOf returns the 1-based line of byte offset off in data.
func lineOf(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// skipSpace returns the offset of the first byte at or after off that is
// neither JSON whitespace nor a comma: where the next value starts.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}
