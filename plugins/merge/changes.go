package merge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/abi"
)

// Symbol kinds of Go declarations.
const (
	KindFunc   = "func"
	KindMethod = "method"
	KindType   = "type"
	KindVar    = "var"
	KindConst  = "const"
)

// ChangedSymbol is a symbol a change added, removed or modified.
type ChangedSymbol struct {
	File string `json:"file"`
	// Symbol is the name; a method is "Recv.Name" with the receiver's base
	// type name (no pointer, no type parameters).
	Symbol string `json:"symbol"`
	Kind   string `json:"kind"`
	// Change is abi.ChangeAdded, abi.ChangeDeleted ("removed") or
	// abi.ChangeModified.
	Change string `json:"change"`
}

// ChangeRemoved is the change kind of a symbol present only before.
const ChangeRemoved = "removed"

// Changes is what ExtractChanges found.
type Changes struct {
	// Symbols are the changed symbols of Go files that parsed, sorted by
	// file, then symbol, then kind.
	Symbols []ChangedSymbol `json:"symbols"`
	// UnparsedChangedFiles are changed files the symbol checks cannot see
	// into: other languages, omitted content, and Go files that do not
	// parse on a present side. Only build/test covers them. Sorted.
	UnparsedChangedFiles []string `json:"unparsed_changed_files"`
	// ParseErrors gives the first parse error of each unparsable Go file.
	ParseErrors map[string]string `json:"parse_errors,omitempty"`
	// After holds the declarations of each parsed Go file's after side,
	// for DuplicateDeclarations.
	after map[string][]decl
}

// decl is one top-level declaration.
type decl struct {
	name string // "Foo", or "Recv.Name" for a method
	kind string
	text string // source text that identifies its content
	line int
}

// key is how declarations are matched between the two sides.
func (d decl) key() string { return d.kind + " " + d.name }

// ExtractChanges compares each file's before and after side. A file whose
// sides are equal is ignored. For a Go file (.go) whose present sides all
// parse, every top-level declaration is matched by (kind, name) across the
// sides and reported as added, removed or modified; modified means its
// source text differs (a comment above a declaration is not part of it).
// Every other changed file is listed in UnparsedChangedFiles.
func ExtractChanges(changes []abi.FileChange) Changes {
	out := Changes{Symbols: []ChangedSymbol{}, UnparsedChangedFiles: []string{}, after: map[string][]decl{}}
	for _, fc := range changes {
		if !fc.ContentOmitted && fc.Before != nil && fc.After != nil && *fc.Before == *fc.After {
			continue
		}
		if fc.ContentOmitted || !strings.HasSuffix(fc.Path, ".go") {
			out.UnparsedChangedFiles = append(out.UnparsedChangedFiles, fc.Path)
			continue
		}
		before, errB := parseSide(fc.Path, fc.Before)
		after, errA := parseSide(fc.Path, fc.After)
		if err := cmpErr(errB, errA); err != nil {
			out.UnparsedChangedFiles = append(out.UnparsedChangedFiles, fc.Path)
			if out.ParseErrors == nil {
				out.ParseErrors = map[string]string{}
			}
			out.ParseErrors[fc.Path] = err.Error()
			continue
		}
		if fc.After != nil {
			out.after[fc.Path] = after
		}
		out.Symbols = append(out.Symbols, diff(fc.Path, before, after)...)
	}
	slices.Sort(out.UnparsedChangedFiles)
	out.UnparsedChangedFiles = slices.Compact(out.UnparsedChangedFiles)
	slices.SortFunc(out.Symbols, func(a, b ChangedSymbol) int {
		return strings.Compare(a.File+"\x00"+a.Symbol+"\x00"+a.Kind, b.File+"\x00"+b.Symbol+"\x00"+b.Kind)
	})
	return out
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// diff matches declarations by (kind, name). Several declarations with the
// same key (init functions, blank vars, or duplicates) are compared as the
// sequence of their texts.
func diff(file string, before, after []decl) []ChangedSymbol {
	group := func(ds []decl) (map[string][]string, map[string]decl) {
		texts, first := map[string][]string{}, map[string]decl{}
		for _, d := range ds {
			if _, ok := first[d.key()]; !ok {
				first[d.key()] = d
			}
			texts[d.key()] = append(texts[d.key()], d.text)
		}
		return texts, first
	}
	tb, fb := group(before)
	ta, fa := group(after)
	var out []ChangedSymbol
	for k, texts := range ta {
		d := fa[k]
		old, ok := tb[k]
		switch {
		case !ok:
			out = append(out, ChangedSymbol{File: file, Symbol: d.name, Kind: d.kind, Change: abi.ChangeAdded})
		case !slices.Equal(old, texts):
			out = append(out, ChangedSymbol{File: file, Symbol: d.name, Kind: d.kind, Change: abi.ChangeModified})
		}
	}
	for k := range tb {
		if _, ok := ta[k]; !ok {
			d := fb[k]
			out = append(out, ChangedSymbol{File: file, Symbol: d.name, Kind: d.kind, Change: ChangeRemoved})
		}
	}
	return out
}

// parseSide parses one side of a Go file; a missing side has no
// declarations.
func parseSide(name string, src *string) ([]decl, error) {
	if src == nil {
		return nil, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, *src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	return decls(fset, f, *src), nil
}

// decls lists f's top-level declarations with their source text.
func decls(fset *token.FileSet, f *ast.File, src string) []decl {
	text := func(n ast.Node) string {
		return src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset]
	}
	line := func(n ast.Node) int { return fset.Position(n.Pos()).Line }
	var out []decl
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && len(d.Recv.List) > 0 {
				out = append(out, decl{name: recvName(d.Recv.List[0].Type) + "." + d.Name.Name, kind: KindMethod, text: text(d), line: line(d)})
			} else {
				out = append(out, decl{name: d.Name.Name, kind: KindFunc, text: text(d), line: line(d)})
			}
		case *ast.GenDecl:
			var lastValues string // implicit repetition in const groups
			for i, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out = append(out, decl{name: s.Name.Name, kind: KindType, text: text(s), line: line(s)})
				case *ast.ValueSpec:
					kind := KindVar
					t := text(s)
					if d.Tok == token.CONST {
						kind = KindConst
						// A const without values repeats the last
						// explicit ones with its own iota: both are its
						// content.
						if len(s.Values) > 0 {
							lastValues = t
						} else {
							t += "\x00" + lastValues + "\x00iota=" + strconv.Itoa(i)
						}
					}
					for _, n := range s.Names {
						out = append(out, decl{name: n.Name, kind: kind, text: t, line: line(n)})
					}
				}
			}
		}
	}
	return out
}

// recvName is the base type name of a method receiver: T for T, *T, T[K],
// *T[K, V].
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}
