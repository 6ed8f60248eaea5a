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
func CheckNames(doc []byte, structs Structs) error {
	if !utf8.Valid(doc) {
		return fmt.Errorf("%w: not valid UTF-8", ErrMemberName)
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	w := walker{d: d, structs: structs}
	if err := w.value(""); err != nil {
		return err
	}
	return nil
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

// pointerEscaper escapes a member name as a JSON Pointer token (RFC 6901).
// Built once: a Replacer builds its tables on first use, which per call
// cost 5% of a gate call (docs/PERFORMANCE.md).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escape(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return pointerEscaper.Replace(name)
}

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
