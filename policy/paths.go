package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
)

// IsPathArgument reports whether a top-level argument names a file system
// path, by name: path, paths, source, destination, file, dir, directory,
// root, or a name ending in path, paths, dir or directory (any case, with
// or without a separating _ or -). Such an argument, when its type is a
// string or a set of strings, also appears lexically cleaned in
// context.paths (CleanPath).
func IsPathArgument(name string) bool {
	n := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
	switch n {
	case "path", "paths", "source", "destination", "file", "dir", "directory", "root":
		return true
	}
	for _, suf := range []string{"path", "paths", "dir", "directory"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// CleanPath is the lexical form of p a policy compares: path.Clean's
// ("." segments dropped, ".." applied to the segment before it, repeated
// "/" made one, no trailing "/"). It reads no disk: a symbolic link is
// invisible to it. "" stays "". A relative path stays relative, so it
// never matches a pattern that starts with "/". A backslash is left as it
// is: context.paths never holds a path with one, nor one that starts with
// "//" (ErrAmbiguousPath).
func CleanPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// ErrAmbiguousPath: a path argument a server may read otherwise than the
// policy compares it. A backslash is an ordinary character of a name to a
// POSIX server ("public\x" is one file beside public/) and a separator to
// a Windows one (a file in public/). A leading "//" names a network share
// on Windows ("//host/share/..": another machine) and is
// implementation-defined on POSIX, while cleaning would make it "/". The
// gate cannot know which the server does: whichever reading the policy
// compared, the other could place the call elsewhere. The call is
// inconclusive (argument_unrepresentable); paths are written with single
// "/", which Windows servers read too.
var ErrAmbiguousPath = errors.New(`a backslash, or a leading "//", is read otherwise by one server than another; write paths with single "/"`)

// pathsType is the record type of context.paths for a tool's arguments
// record: each top-level path argument that is a String or Set<String>,
// with the same optionality.
func pathsType(args Type) Type {
	t := Type{Kind: KindRecord}
	for _, a := range args.Attrs {
		if !IsPathArgument(a.Name) {
			continue
		}
		if a.Type.Kind == KindString || (a.Type.Kind == KindSet && a.Type.Elem.Kind == KindString) {
			t.Attrs = append(t.Attrs, a)
		}
	}
	return t
}

// pathsValue cleans the path arguments of an arguments record value; a
// path with a backslash or a leading "//" is an error naming its argument
// (ErrAmbiguousPath).
func pathsValue(pt Type, args types.Record) (types.Record, error) {
	rm := types.RecordMap{}
	clean := func(name string, s types.String) (types.String, error) {
		if strings.Contains(string(s), `\`) || strings.HasPrefix(string(s), "//") {
			return "", fmt.Errorf("arguments.%s: %q: %w", name, string(s), ErrAmbiguousPath)
		}
		return types.String(CleanPath(string(s))), nil
	}
	for _, a := range pt.Attrs {
		v, ok := args.Get(types.String(a.Name))
		if !ok {
			continue
		}
		switch x := v.(type) {
		case types.String:
			c, err := clean(a.Name, x)
			if err != nil {
				return types.Record{}, err
			}
			rm[types.String(a.Name)] = c
		case types.Set:
			var out []types.Value
			for e := range x.All() {
				if s, ok := e.(types.String); ok {
					c, err := clean(a.Name, s)
					if err != nil {
						return types.Record{}, err
					}
					out = append(out, c)
				}
			}
			rm[types.String(a.Name)] = types.NewSet(out...)
		}
	}
	return types.NewRecord(rm), nil
}
