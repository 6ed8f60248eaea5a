package abischema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/jsonptr"
)

// Member-name rules. JSON Schema validation matches member names exactly,
// and so do most JSON readers; encoding/json matches struct fields with
// Unicode case folding (so "Verdict", "ſeverity" and "K" match "verdict",
// "severity" and "k"), and every reader picks its own winner among duplicate
// names. A document that two readers could see differently is refused, so
// the schema, the gate, the host and the executor all read one value:
//   - no object may contain two member names that are equal under Unicode
//     simple case folding (this includes exact duplicates);
//   - in the objects that are decoded into structs (Structs), a member name
//     that folds to a field's name must be that name exactly.

// Structs lists, for each message, the objects decoded into Go structs and
// their member names. A path is a sequence of member names, with "*" for
// any array element.
type Structs map[string][]string

// Structs of the ABI's messages.
var (
	ResponseStructs   = Structs{"": jsonNames[abi.Response](), "/findings/*": jsonNames[abi.Finding]()}
	DescriptorStructs = Structs{"": jsonNames[abi.Descriptor]()}
	ProposalStructs   = Structs{
		"":                           jsonNames[abi.Proposal](),
		"/actions/*":                 jsonNames[abi.Action](),
		"/actions/*/preconditions/*": jsonNames[abi.Precondition](),
	}
	ToolCallStructs = Structs{"": jsonNames[abi.ToolCall]()}
	MergeStructs    = Structs{
		"":                jsonNames[abi.Merge](),
		"/file_changes/*": jsonNames[abi.FileChange](),
		"/footprint/*":    jsonNames[abi.SymbolRef](),
		"/waiver":         jsonNames[abi.Waiver](),
	}
)

// jsonNames returns the JSON member names of T's fields.
func jsonNames[T any]() []string {
	t := reflect.TypeFor[T]()
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// ErrMemberName is wrapped by every error of CheckNames.
var ErrMemberName = errors.New("ambiguous member name")

// CheckNames applies the member-name rules to doc, which must be JSON. It
// also refuses invalid UTF-8.
//
// A valid document is checked in one pass over its bytes, allocating only
// for member names with escapes, error text and objects of more than
// smallObject members: it runs on every subject and every gate answer. A
// document that is not JSON takes the decoder's walk, for its error.
func CheckNames(doc []byte, structs Structs) error {
	if !utf8.Valid(doc) {
		return fmt.Errorf("%w: not valid UTF-8", ErrMemberName)
	}
	if !json.Valid(doc) {
		d := json.NewDecoder(bytes.NewReader(doc))
		d.UseNumber()
		w := walker{d: d, structs: structs}
		return w.value("")
	}
	sc := scanner{doc: doc, structs: structs}
	return sc.value()
}

// smallObject is the largest object whose names are compared pairwise;
// larger ones are checked through a map of folded keys.
const smallObject = 16

// star is the path segment of an array element.
var star = []byte("*")

// scanner walks a document json.Valid accepted. segs is the path of the
// current value (member names unescaped, star for elements); names[i]
// holds the member names of the object open at depth i, reused.
type scanner struct {
	doc     []byte
	i       int
	structs Structs
	segs    [][]byte
	names   [][][]byte
}

func (s *scanner) space() {
	for s.i < len(s.doc) {
		switch s.doc[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value() error {
	s.space()
	switch s.doc[s.i] {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		s.str()
	default: // a number, true, false or null
		for s.i < len(s.doc) {
			switch s.doc[s.i] {
			case ' ', '\t', '\n', '\r', ',', ']', '}':
				return nil
			}
			s.i++
		}
	}
	return nil
}

// str skips the string at s.i and returns its raw content, and whether it
// holds an escape.
func (s *scanner) str() (raw []byte, escaped bool) {
	s.i++ // the opening quote
	start := s.i
	for {
		switch s.doc[s.i] {
		case '\\':
			escaped = true
			s.i += 2
			continue
		case '"':
			raw = s.doc[start:s.i]
			s.i++
			return raw, escaped
		}
		s.i++
	}
}

// open refuses a container at s.segs nested deeper than maxDepth (the
// outermost is at depth 1), as the decoder walk does.
func (s *scanner) open() error {
	if len(s.segs) >= maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", ErrMemberName, maxDepth)
	}
	s.i++
	return nil
}

func (s *scanner) array() error {
	if err := s.open(); err != nil {
		return err
	}
	for !s.closed(']') {
		if err := s.child(star); err != nil {
			return err
		}
	}
	return nil
}

// closed moves to the next element of the open container, past white
// space and a comma, and reports whether end closed the container instead.
func (s *scanner) closed(end byte) bool {
	for {
		s.space()
		switch s.doc[s.i] {
		case end:
			s.i++
			return true
		case ',':
			s.i++
		default:
			return false
		}
	}
}

// child walks the value at s.i, whose path segment is seg.
func (s *scanner) child(seg []byte) error {
	s.segs = append(s.segs, seg)
	if err := s.value(); err != nil {
		return err
	}
	s.segs = s.segs[:len(s.segs)-1]
	return nil
}

func (s *scanner) object() error {
	if err := s.open(); err != nil {
		return err
	}
	depth := len(s.segs)
	for len(s.names) <= depth {
		s.names = append(s.names, nil)
	}
	s.names[depth] = s.names[depth][:0]
	fields := s.fields()
	var folded map[string][]byte // for objects of more than smallObject members
	for !s.closed('}') {
		raw, escaped := s.str()
		name := raw
		if escaped { // decoded exactly as encoding/json decodes it
			var u string
			if err := json.Unmarshal(s.doc[s.i-len(raw)-2:s.i], &u); err != nil {
				return fmt.Errorf("not JSON: %w", err)
			}
			name = []byte(u)
		}
		if err := s.member(depth, name, fields, &folded); err != nil {
			return err
		}
		s.space()
		s.i++ // :
		if err := s.child(name); err != nil {
			return err
		}
	}
	return nil
}

// member checks name against the earlier names of the object at depth and
// against fields, the struct fields of the object, then records it.
func (s *scanner) member(depth int, name []byte, fields []string, folded *map[string][]byte) error {
	seen := s.names[depth]
	var other []byte
	switch {
	case *folded != nil:
		other = (*folded)[foldKey(string(name))]
	case len(seen) < smallObject:
		for _, n := range seen {
			if bytes.EqualFold(n, name) {
				other = n
				break
			}
		}
	default:
		*folded = make(map[string][]byte, 2*len(seen))
		for _, n := range seen {
			(*folded)[foldKey(string(n))] = n
		}
		other = (*folded)[foldKey(string(name))]
	}
	if other != nil {
		return fmt.Errorf("%w: %s and %s in %s", ErrMemberName, strconv.Quote(string(other)), strconv.Quote(string(name)), where(s.pattern()))
	}
	if *folded != nil {
		(*folded)[foldKey(string(name))] = name
	}
	s.names[depth] = append(seen, name)
	for _, f := range fields {
		if f != string(name) && strings.EqualFold(f, string(name)) {
			return fmt.Errorf("%w: %s in %s must be spelled %s", ErrMemberName, strconv.Quote(string(name)), where(s.pattern()), strconv.Quote(f))
		}
	}
	return nil
}

// fields returns the struct fields of the object at s.segs, if any.
func (s *scanner) fields() []string {
	for key, fields := range s.structs {
		if matchPath(key, s.segs) {
			return fields
		}
	}
	return nil
}

// pattern is s.segs as a Structs path, for error text.
func (s *scanner) pattern() string {
	var b strings.Builder
	for _, seg := range s.segs {
		b.WriteByte('/')
		b.WriteString(escape(string(seg)))
	}
	return b.String()
}

// isEscaped reports whether part is escape(seg), without building it.
func isEscaped(part string, seg []byte) bool { return jsonptr.EqualEscaped(part, seg) }

// matchPath reports whether key, a Structs path, names segs: the path
// pattern + "/" + escape(name) the decoder walk builds.
func matchPath(key string, segs [][]byte) bool {
	for _, seg := range segs {
		if key == "" || key[0] != '/' {
			return false
		}
		key = key[1:]
		n := strings.IndexByte(key, '/')
		if n < 0 {
			n = len(key)
		}
		if !isEscaped(key[:n], seg) {
			return false
		}
		key = key[n:]
	}
	return key == ""
}

type walker struct {
	d       *json.Decoder
	structs Structs
	depth   int
}

// maxDepth bounds nesting, so a deeply nested document costs no stack.
const maxDepth = 1000

func (w *walker) value(pattern string) error {
	tok, err := w.d.Token()
	if err != nil {
		if err == io.EOF {
			return fmt.Errorf("not JSON: empty")
		}
		return fmt.Errorf("not JSON: %w", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	w.depth++
	defer func() { w.depth-- }()
	if w.depth > maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", ErrMemberName, maxDepth)
	}
	switch delim {
	case '[':
		for w.d.More() {
			if err := w.value(pattern + "/*"); err != nil {
				return err
			}
		}
	case '{':
		known := map[string]string{}
		if fields, ok := w.structs[pattern]; ok {
			for _, f := range fields {
				known[foldKey(f)] = f
			}
		}
		seen := map[string]string{}
		for w.d.More() {
			tok, err := w.d.Token()
			if err != nil {
				return fmt.Errorf("not JSON: %w", err)
			}
			name, _ := tok.(string)
			k := foldKey(name)
			if other, dup := seen[k]; dup {
				return fmt.Errorf("%w: %s and %s in %s", ErrMemberName, strconv.Quote(other), strconv.Quote(name), where(pattern))
			}
			seen[k] = name
			if f, ok := known[k]; ok && f != name {
				return fmt.Errorf("%w: %s in %s must be spelled %s", ErrMemberName, strconv.Quote(name), where(pattern), strconv.Quote(f))
			}
			if err := w.value(pattern + "/" + escape(name)); err != nil {
				return err
			}
		}
	}
	_, err = w.d.Token() // the closing delimiter
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return nil
}

func where(pattern string) string {
	if pattern == "" {
		return "the top-level object"
	}
	return strconv.Quote(pattern)
}

// escape escapes a member name as a JSON Pointer token (RFC 6901).
func escape(name string) string { return jsonptr.Escape(name) }

// foldKey maps s to a canonical form under Unicode simple case folding: each
// rune becomes the smallest rune of its folding orbit. Two names are equal
// under folding exactly when their keys are equal.
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < m {
				m = f
			}
		}
		b.WriteRune(m)
	}
	return b.String()
}
