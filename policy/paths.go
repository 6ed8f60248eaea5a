package policy

import (
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
// "/" made one, no trailing "/"), after backslashes are read as "/". It
// reads no disk: a symbolic link is invisible to it. "" stays "".
// A relative path stays relative, so it never matches a pattern that
// starts with "/".
func CleanPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(strings.ReplaceAll(p, `\`, "/"))
}

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

// pathsValue cleans the path arguments of an arguments record value.
func pathsValue(pt Type, args types.Record) types.Record {
	rm := types.RecordMap{}
	for _, a := range pt.Attrs {
		v, ok := args.Get(types.String(a.Name))
		if !ok {
			continue
		}
		switch x := v.(type) {
		case types.String:
			rm[types.String(a.Name)] = types.String(CleanPath(string(x)))
		case types.Set:
			var out []types.Value
			for e := range x.All() {
				if s, ok := e.(types.String); ok {
					out = append(out, types.String(CleanPath(string(s))))
				}
			}
			rm[types.String(a.Name)] = types.NewSet(out...)
		}
	}
	return types.NewRecord(rm)
}
