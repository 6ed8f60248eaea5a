package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// pinFile pins the named plugins (all when names is empty) in the config
// file at path, whose text is src, by the file's format: YAML, TOML or
// JSON, as viper reads them. Each editor changes only the sha256 values (or
// adds the key beside path) and proves the result by parsing it again.
func pinFile(path string, src []byte, names []string) ([]byte, []string, error) {
	base := filepath.Dir(path)
	switch ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")); ext {
	case "yaml", "yml":
		return pinConfig(src, base, names)
	case "json":
		return pinJSON(src, base, names)
	case "toml":
		return pinTOML(src, base, names)
	default:
		return nil, nil, fmt.Errorf("plugin pin edits .yaml, .yml, .toml and .json config files, not %q", ext)
	}
}

// errBuiltinPin refuses to pin a built-in gate in a TOML or JSON config:
// only YAML configs are edited for those.
func errBuiltinPin(name string) error {
	return fmt.Errorf("plugins.%s.builtin: pinned by plugin pin in YAML configs only; write the sha256 gatehost plugin inspect builtin:GATE prints", name)
}

// pinEdit replaces src[start:end] by text.
type pinEdit struct {
	start, end int
	text       string
}

// applyEdits applies non-overlapping edits to src, last first so that the
// offsets of the earlier ones stay valid.
func applyEdits(src []byte, edits []pinEdit) []byte {
	slices.SortFunc(edits, func(a, b pinEdit) int { return b.start - a.start })
	out := slices.Clone(src)
	for _, e := range edits {
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
	}
	return out
}

// checkPins proves that the edited file, decoded by unmarshal, carries
// exactly the wanted pins.
func checkPins(out []byte, format string, unmarshal func([]byte, any) error, want map[string]string) error {
	var doc struct {
		Plugins map[string]struct {
			SHA256 any `json:"sha256" toml:"sha256"`
		} `json:"plugins" toml:"plugins"`
	}
	if err := unmarshal(out, &doc); err != nil {
		return fmt.Errorf("edit produced invalid %s (file not changed): %w", format, err)
	}
	for name, sum := range want {
		got, _ := doc.Plugins[name].SHA256.(string)
		if !strings.EqualFold(got, sum) {
			return fmt.Errorf("plugins.%s.sha256: edit did not take (file not changed)", name)
		}
	}
	return nil
}

// jsonNode is a JSON value and where its text lies in the source.
type jsonNode struct {
	start, end int  // the value is src[start:end]
	delim      byte // '{' or '[' for containers, 0 for scalars
	scalar     any
	members    []jsonMember // of an object, in source order
}

type jsonMember struct {
	name     string
	keyStart int
	value    *jsonNode
}

func (n *jsonNode) member(name string) *jsonMember {
	if n == nil {
		return nil
	}
	// The last of duplicate names is the one a decoder keeps.
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].name == name {
			return &n.members[i]
		}
	}
	return nil
}

// parseJSON decodes src into a jsonNode tree with source offsets.
func parseJSON(src []byte) (*jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	n, err := parseJSONValue(src, dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("invalid JSON: data after the top-level value")
	}
	return n, nil
}

// valueStart is the offset of the next token after off: past white space
// and the separators the decoder consumes silently.
func valueStart(src []byte, off int) int {
	for off < len(src) && strings.IndexByte(" \t\r\n:,", src[off]) >= 0 {
		off++
	}
	return off
}

func parseJSONValue(src []byte, dec *json.Decoder) (*jsonNode, error) {
	start := valueStart(src, int(dec.InputOffset()))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	n := &jsonNode{start: start}
	d, ok := tok.(json.Delim)
	if !ok {
		n.scalar, n.end = tok, int(dec.InputOffset())
		return n, nil
	}
	n.delim = byte(d)
	for dec.More() {
		m := jsonMember{}
		if d == '{' {
			m.keyStart = valueStart(src, int(dec.InputOffset()))
			k, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			m.name, _ = k.(string)
		}
		if m.value, err = parseJSONValue(src, dec); err != nil {
			return nil, err
		}
		if d == '{' {
			n.members = append(n.members, m)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	n.end = int(dec.InputOffset())
	return n, nil
}

// pinJSON is pinConfig for a JSON config.
func pinJSON(src []byte, base string, names []string) ([]byte, []string, error) {
	doc, err := parseJSON(src)
	if err != nil {
		return nil, nil, err
	}
	pm := doc.member("plugins")
	if doc.delim != '{' || pm == nil || pm.value.delim != '{' {
		return nil, nil, fmt.Errorf("plugins: no plugins object to pin")
	}
	var edits []pinEdit
	var report []string
	want := map[string]string{}
	seen := map[string]bool{}
	for _, m := range pm.value.members {
		name, p := m.name, m.value
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		seen[name] = true
		if p.delim != '{' {
			return nil, nil, fmt.Errorf("plugins.%s: not an object", name)
		}
		pathM := p.member("path")
		path := ""
		if pathM != nil {
			path, _ = pathM.value.scalar.(string)
		}
		if p.member("builtin") != nil {
			return nil, nil, errBuiltinPin(name)
		}
		sum, err := moduleSum(name, base, path, "")
		if err != nil {
			return nil, nil, err
		}
		want[name] = sum
		quoted := strconv.Quote(sum)
		shaM := p.member("sha256")
		if shaM == nil {
			report = append(report, pinReport(name, sum, path, false, ""))
			// Beside path, on a line of its own when the object spans lines.
			sep := ", "
			if bytes.IndexByte(src[p.start:pathM.keyStart], '\n') >= 0 {
				sep = ",\n" + lineIndent(src, pathM.keyStart)
			}
			edits = append(edits, pinEdit{pathM.value.end, pathM.value.end, sep + `"sha256": ` + quoted})
			continue
		}
		was, _ := shaM.value.scalar.(string)
		report = append(report, pinReport(name, sum, path, true, was))
		if !strings.EqualFold(was, sum) {
			edits = append(edits, pinEdit{shaM.value.start, shaM.value.end, quoted})
		}
	}
	if err := allSeen(names, seen); err != nil {
		return nil, nil, err
	}
	out := applyEdits(src, edits)
	if err := checkPins(out, "JSON", json.Unmarshal, want); err != nil {
		return nil, nil, err
	}
	return out, report, nil
}

// lineIndent is the white space that starts the line holding offset off.
func lineIndent(src []byte, off int) string {
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	i := ls
	for i < off && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return string(src[ls:i])
}

var (
	tomlHeaderRE = regexp.MustCompile(`^\s*\[\s*plugins\s*\.\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*\]\s*(?:#.*)?$`)
	tomlTableRE  = regexp.MustCompile(`^\s*\[`)
	tomlKeyRE    = regexp.MustCompile(`^(\s*)(path|sha256|"path"|"sha256")\s*=\s*(.*?)\s*$`)
)

// pinTOML is pinConfig for a TOML config. Each plugin to pin must be
// written as a [plugins.NAME] table (the shape the docs show); an inline
// table or dotted keys are refused by name, as YAML's flow style is.
func pinTOML(src []byte, base string, names []string) ([]byte, []string, error) {
	var doc struct {
		Plugins map[string]any `toml:"plugins"`
	}
	if err := toml.Unmarshal(src, &doc); err != nil {
		return nil, nil, fmt.Errorf("invalid TOML: %w", err)
	}
	if len(doc.Plugins) == 0 {
		return nil, nil, fmt.Errorf("plugins: no plugins table to pin")
	}
	lines := strings.SplitAfter(string(src), "\n")
	offsets := make([]int, len(lines)+1)
	for i, ln := range lines {
		offsets[i+1] = offsets[i] + len(ln)
	}
	var edits []pinEdit
	var report []string
	want := map[string]string{}
	seen := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		h := tomlHeaderRE.FindStringSubmatch(strings.TrimRight(lines[i], "\r\n"))
		if h == nil {
			continue
		}
		name := h[1] + h[2] + h[3]
		if len(names) > 0 && !slices.Contains(names, name) || seen[name] {
			continue
		}
		seen[name] = true
		table, _ := doc.Plugins[name].(map[string]any)
		path, _ := table["path"].(string)
		if _, ok := table["builtin"]; ok {
			return nil, nil, errBuiltinPin(name)
		}
		sum, err := moduleSum(name, base, path, "")
		if err != nil {
			return nil, nil, err
		}
		want[name] = sum
		pathLine, shaLine := -1, -1
		var shaKey []string
		for j := i + 1; j < len(lines) && !tomlTableRE.MatchString(lines[j]); j++ {
			k := tomlKeyRE.FindStringSubmatch(strings.TrimRight(lines[j], "\r\n"))
			switch {
			case k == nil:
			case strings.Trim(k[2], `"`) == "path":
				pathLine = j
			default:
				shaLine, shaKey = j, k
			}
		}
		had := shaLine >= 0
		was, _ := table["sha256"].(string)
		report = append(report, pinReport(name, sum, path, had, was))
		switch {
		case !had && pathLine < 0:
			return nil, nil, fmt.Errorf("plugins.%s.path: not on a line of its own in [plugins.%s]; edit the pin by hand", name, name)
		case !had:
			ln := lines[pathLine]
			nl := ""
			if !strings.HasSuffix(ln, "\n") {
				nl = "\n"
			}
			indent := ln[:len(ln)-len(strings.TrimLeft(ln, " \t"))]
			at := offsets[pathLine+1]
			edits = append(edits, pinEdit{at, at, nl + indent + `sha256 = "` + sum + `"` + "\n"})
		case !strings.EqualFold(was, sum):
			// Keep a trailing comment: it follows the closing quote.
			rest := ""
			if v := shaKey[3]; len(v) > 1 && (v[0] == '"' || v[0] == '\'') {
				if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
					rest = v[end+2:]
				}
			}
			ln := strings.TrimRight(lines[shaLine], "\r\n")
			edits = append(edits, pinEdit{offsets[shaLine], offsets[shaLine] + len(ln), shaKey[1] + `sha256 = "` + sum + `"` + rest})
		}
	}
	wanted := names
	if len(wanted) == 0 {
		wanted = slices.Sorted(maps.Keys(doc.Plugins))
	}
	for _, n := range wanted {
		if _, ok := doc.Plugins[n]; ok && !seen[n] {
			return nil, nil, fmt.Errorf("plugins.%s: not written as a [plugins.%s] table; write it as one to pin it", n, n)
		}
	}
	if err := allSeen(names, seen); err != nil {
		return nil, nil, err
	}
	out := applyEdits(src, edits)
	if err := checkPins(out, "TOML", toml.Unmarshal, want); err != nil {
		return nil, nil, err
	}
	return out, report, nil
}
