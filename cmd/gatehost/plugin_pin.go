package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/safefile"
)

func cmdPluginPin(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("plugin pin", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultFile, "config file to edit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gatehost plugin pin [--config F] [PLUGIN...]  (default: every plugin)")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, func(int) bool { return true }); done {
		return code
	}
	src, err := config.ReadFile(*configPath)
	if err != nil {
		return fail(stderr, err)
	}
	out, report, err := pinFile(*configPath, src, fs.Args())
	if err != nil {
		return fail(stderr, fmt.Errorf("config %s: %w", *configPath, err))
	}
	if string(out) != string(src) {
		// Write beside, then rename: a crash never leaves half a config.
		mode := os.FileMode(0o644)
		if st, err := os.Stat(*configPath); err == nil {
			mode = st.Mode().Perm()
		}
		if err := (safefile.Replace{TempSuffix: ".pin.tmp"}).WriteFile(*configPath, out, mode); err != nil {
			return fail(stderr, err)
		}
	}
	for _, line := range report {
		fmt.Fprintln(stdout, line)
	}
	return 0
}

// moduleSum is the SHA-256, in lowercase hex, of plugin name's module at
// path (relative to base), or of the installed module of the built-in gate
// builtin (config.ResolveBuiltin) when path is "".
func moduleSum(name, base, path, builtin string) (string, error) {
	switch {
	case path != "" && builtin != "":
		return "", fmt.Errorf("plugins.%s: path and builtin are exclusive: give one", name)
	case builtin != "":
		p, err := config.ResolveBuiltin(builtin)
		if err != nil {
			return "", fmt.Errorf("plugins.%s.builtin: %w", name, err)
		}
		path = p
	case path == "":
		return "", fmt.Errorf("plugins.%s.path: required", name)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	wasm, err := safefile.ReadFile(path, host.MaxModuleFileBytes)
	if err != nil {
		return "", fmt.Errorf("plugins.%s.path: %w", name, err)
	}
	s := sha256.Sum256(wasm)
	return hex.EncodeToString(s[:]), nil
}

// allSeen reports the first of the named plugins the file does not have.
func allSeen(names []string, seen map[string]bool) error {
	for _, n := range names {
		if !seen[n] {
			return fmt.Errorf("plugins.%s: no such plugin", n)
		}
	}
	return nil
}

// pinReport is the line pin prints for one plugin: had says whether the
// file had a sha256 key, was is its value.
func pinReport(name, sum, path string, had bool, was string) string {
	switch {
	case !had:
		return fmt.Sprintf("%s: pinned %s (%s)", name, sum, path)
	case strings.EqualFold(was, sum):
		return fmt.Sprintf("%s: unchanged %s", name, sum)
	case was == "":
		was = "empty"
	}
	return fmt.Sprintf("%s: pinned %s (was %s)", name, sum, was)
}

// pinConfig sets plugins.<name>.sha256 to the SHA-256 of each named plugin's
// module (all plugins when names is empty) and returns the edited file and
// one line per plugin. It edits the text in place, line by line, at the
// positions the YAML parser reports, so comments, order, quoting and
// layout all survive; the result is parsed again to prove the pins landed.
func pinConfig(src []byte, base string, names []string) ([]byte, []string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, err
	}
	plugins := mapValue(root(&doc), "plugins")
	if plugins == nil || plugins.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("plugins: no plugins mapping to pin")
	}
	lines := strings.SplitAfter(string(src), "\n")
	type edit struct {
		line int // 0-based
		text string
		// insert is true to insert text as a new line before line.
		insert bool
	}
	var edits []edit
	var report []string
	want := map[string]string{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(plugins.Content); i += 2 {
		key, p := plugins.Content[i], plugins.Content[i+1]
		name := key.Value
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		seen[name] = true
		if p.Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("plugins.%s: not a mapping", name)
		}
		if p.Style&yaml.FlowStyle != 0 {
			return nil, nil, fmt.Errorf("plugins.%s: written in flow style ({...}); write it as a block mapping to pin it", name)
		}
		// The pin goes under path:, or under builtin: for a built-in gate.
		where := "path"
		pathNode, builtinNode := mapValue(p, "path"), mapValue(p, "builtin")
		path, builtin := "", ""
		if pathNode != nil {
			path = pathNode.Value
		}
		if builtinNode != nil {
			builtin = builtinNode.Value
			if path == "" {
				where = "builtin"
			}
		}
		sum, err := moduleSum(name, base, path, builtin)
		if err != nil {
			return nil, nil, err
		}
		if builtin != "" {
			path = "builtin " + builtin
		}
		want[name] = sum
		shaKey, shaVal := mapEntry(p, "sha256")
		was := ""
		if shaVal != nil {
			was = shaVal.Value
		}
		report = append(report, pinReport(name, sum, path, shaKey != nil, was))
		switch {
		case shaKey == nil:
			// A new line below path: (or builtin:), at the same indentation.
			pk, _ := mapEntry(p, where)
			edits = append(edits, edit{line: pk.Line, insert: true,
				text: strings.Repeat(" ", pk.Column-1) + `sha256: "` + sum + `"` + "\n"})
		case strings.EqualFold(shaVal.Value, sum):
		default:
			if shaVal.Line != shaKey.Line && shaVal.Value != "" {
				return nil, nil, fmt.Errorf("plugins.%s.sha256: value not on the key's line; edit it by hand", name)
			}
			ln := lines[shaKey.Line-1]
			start := shaKey.Column - 1
			end := valueEnd(ln, shaKey, shaVal)
			lines[shaKey.Line-1] = ln[:start] + `sha256: "` + sum + `"` + ln[end:]
		}
	}
	if err := allSeen(names, seen); err != nil {
		return nil, nil, err
	}
	// Insert from the bottom so earlier line numbers stay valid.
	slices.SortFunc(edits, func(a, b edit) int { return b.line - a.line })
	for _, e := range edits {
		if e.line > 0 && e.line <= len(lines) && !strings.HasSuffix(lines[e.line-1], "\n") {
			lines[e.line-1] += "\n"
		}
		lines = slices.Insert(lines, e.line, e.text)
	}
	out := []byte(strings.Join(lines, ""))
	// Prove it: the edited file parses and carries exactly the pins.
	var check yaml.Node
	if err := yaml.Unmarshal(out, &check); err != nil {
		return nil, nil, fmt.Errorf("edit produced invalid YAML (file not changed): %w", err)
	}
	cp := mapValue(root(&check), "plugins")
	for name, sum := range want {
		v := mapValue(mapValue(cp, name), "sha256")
		if v == nil || !strings.EqualFold(v.Value, sum) {
			return nil, nil, fmt.Errorf("plugins.%s.sha256: edit did not take (file not changed)", name)
		}
	}
	return out, report, nil
}

// valueEnd is the byte offset on line ln just past the sha256 value's text.
func valueEnd(ln string, key, val *yaml.Node) int {
	if val.Value == "" && val.Style == 0 {
		// "sha256:" with no value, or "sha256: ''"-less null.
		i := key.Column - 1 + len(key.Value)
		if j := strings.IndexByte(ln[i:], ':'); j >= 0 {
			return i + j + 1
		}
		return i
	}
	start := val.Column - 1
	switch {
	case val.Style&yaml.DoubleQuotedStyle != 0:
		if j := strings.IndexByte(ln[start+1:], '"'); j >= 0 {
			return start + 1 + j + 1
		}
	case val.Style&yaml.SingleQuotedStyle != 0:
		if j := strings.IndexByte(ln[start+1:], '\''); j >= 0 {
			return start + 1 + j + 1
		}
	}
	return min(start+len(val.Value), len(strings.TrimRight(ln, "\r\n")))
}

func root(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0]
	}
	return doc
}

func mapEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	_, v := mapEntry(m, key)
	return v
}
