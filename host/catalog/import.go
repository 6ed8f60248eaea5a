package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/safefile"
)

// MaxFileBytes caps one catalog file, and the input of Parse. The largest
// real tool list we know of (github-mcp-server, 117 tools) is under 1 MiB
// in total; the cap keeps a hostile file from exhausting memory.
const MaxFileBytes = 16 << 20

// Import formats, for ImportOptions.Format.
const (
	FormatMCP       = "mcp"
	FormatOpenAI    = "openai"
	FormatAnthropic = "anthropic"
	FormatNative    = "native"
)

// ImportOptions say how to read a catalog file.
type ImportOptions struct {
	// Format is FormatMCP, FormatOpenAI, FormatAnthropic or FormatNative;
	// "" detects it from the content. A content that does not fit a
	// forced format is an ErrFormat error.
	Format string
	// Server names the MCP server that serves the tools, as in the
	// operator's config: a non-empty string of [a-z0-9_.-]. It applies to
	// every format. With it, tools get the namespace "mcp.<server>",
	// provenance "mcp_config{<server>}" and source "<server>". Without it
	// nobody vouches for the tools: namespace "unknown", provenance
	// "unverified", no source.
	Server string
}

// Load reads the tools of a catalog file, or of a directory of them, and
// returns them validated and normalised as Builder.Add does, in file order.
// It does not add them to any store.
//
// A directory is read non-recursively: every entry whose name ends in
// ".json" and does not start with "." is parsed (in name order) as Parse
// does, and the tools of all files together must have unique ids and names.
// Subdirectories and other names are skipped; a matching entry that is not
// a regular file (after symlinks; a named pipe, a device) is an error
// matching ErrNotRegular, and so is a path that is neither a regular file
// nor a directory. github-mcp-server's tool
// snapshots, one MCP tool per file, load this way.
//
// Each file may hold at most MaxFileBytes (ErrTooLarge); no more than that
// is ever read. Errors are *Error
// values naming the file and, where it applies, the entry and tool; I/O
// errors wrap the os error.
func Load(path string, opts ImportOptions) ([]Tool, error) {
	im, err := newImporter(opts)
	if err != nil {
		err.(*Error).File = path
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Index: -1, Err: err}
	}
	if !fi.IsDir() {
		data, err := readFile(path)
		if err != nil {
			return nil, err
		}
		return im.parse(data, path)
	}
	entries, err := safefile.ReadDir(path)
	if err != nil {
		return nil, &Error{File: path, Index: -1, Err: bare(err)}
	}
	var all []Tool
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		file := filepath.Join(path, name)
		data, err := readFile(file)
		if err != nil {
			return nil, err
		}
		tools, err := im.parse(data, file)
		if err != nil {
			return nil, err
		}
		all = append(all, tools...)
	}
	return all, nil
}

// Parse reads the tools of one catalog document held in memory, as Load
// reads a file. Errors are those of Load, without a file name.
//
// Formats, detected from the content unless opts.Format forces one:
//
//   - mcp: an MCP tools/list result {"tools":[Tool...]}, a whole JSON-RPC
//     response {"jsonrpc":"2.0","id":...,"result":{"tools":[...]}}, or one
//     MCP Tool object {"name",...}. A Tool is {name, description?,
//     inputSchema, annotations?, ...}; other keys are ignored, and so is
//     nextCursor: a paginated result yields only the tools it holds. The
//     annotations become Hints, with the MCP defaults for missing or null
//     hints (readOnlyHint false, destructiveHint true, idempotentHint
//     false, openWorldHint true), and the effect is Hints.Effect():
//     readOnlyHint true gives read_only; destructiveHint false with
//     idempotentHint true gives idempotent_write; anything else, a
//     destructive idempotent tool included, non_idempotent. A hint of
//     another type than boolean is an ErrInvalidTool error.
//   - openai: a JSON array of Chat Completions tools
//     {"type":"function","function":{name, description?, parameters?}}, or
//     of the flat Responses API form {"type":"function", name,
//     description?, parameters?}. Effect non_idempotent.
//   - anthropic: a JSON array of custom tools {name, description?,
//     input_schema?} ("type", if present, must be "custom"). Effect
//     non_idempotent.
//   - native: {"tools":[{id?, name, aliases?, description?, input_schema?,
//     schema_digest?, provenance?, source?, effect?, hints?,
//     policy_digest?}]}, the fields of Tool with abi.Tool's JSON names, no
//     other key allowed. A missing id is MakeID of the namespace and name,
//     and missing provenance and source come from opts.Server as for the
//     other formats; a given schema_digest must match the schema, and a
//     given policy_digest the normalised record (PolicyDigestOf). hints is
//     Hints' JSON form {"read_only", "destructive", "idempotent",
//     "open_world"}: booleans, a missing one taking the MCP default, no
//     other key. Snapshot.MarshalNative writes this format.
//
// An object with "tools" whose entries fit both mcp and native (say, only
// names) is read as mcp; both readings give the same tools.
//
// A missing schema means {"type":"object"}; a schema that is present but
// not a JSON object is an ErrInvalidSchema error. The document must be
// strict JSON (see CanonicalJSON): duplicate keys, bad UTF-8 and lone
// surrogates are ErrInvalidJSON, because readers could disagree on them.
func Parse(data []byte, opts ImportOptions) ([]Tool, error) {
	im, err := newImporter(opts)
	if err != nil {
		return nil, err
	}
	return im.parse(data, "")
}

// readFile reads a regular file of at most MaxFileBytes. A named pipe is
// refused without being waited on, and a device without being read.
func readFile(path string) ([]byte, error) {
	data, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, &Error{File: path, Index: -1, Err: bare(err)}
	}
	return data, nil
}

// bare drops the path from a safefile error: the *Error names the file.
func bare(err error) error {
	var fe *safefile.Error
	if errors.As(err, &fe) {
		return fe.WithoutPath()
	}
	return err
}

// importer turns documents into tools and checks them, across all the files
// of one Load, against each other.
type importer struct {
	format     string
	ns         string
	provenance string
	source     string
	b          *Builder
	origin     map[string]string // tool id -> where it was defined
}

func newImporter(opts ImportOptions) (*importer, error) {
	switch opts.Format {
	case "", FormatMCP, FormatOpenAI, FormatAnthropic, FormatNative:
	default:
		return nil, &Error{Index: -1, Err: wrap(ErrFormat, "unknown format %q (want mcp, openai, anthropic or native)", cut(opts.Format))}
	}
	im := &importer{
		format:     opts.Format,
		ns:         NamespaceUnknown,
		provenance: ProvenanceUnverified,
		b:          newBuilder(&Snapshot{}),
		origin:     map[string]string{},
	}
	if opts.Server != "" {
		if !validSegment(opts.Server) {
			return nil, &Error{Index: -1, Err: wrap(ErrInvalidID, "server name %q is not a non-empty string of [a-z0-9_.-]", cut(opts.Server))}
		}
		im.ns = abi.ProvenanceNamespace(abi.ProvenanceMCPConfig, opts.Server)
		im.provenance = abi.ProvenanceMCPConfig + "{" + opts.Server + "}"
		im.source = opts.Server
	}
	return im, nil
}

// entry is one tool of a document: its fields by exact key. Exact keys
// matter: encoding/json matches struct fields case-insensitively, so
// {"name":"a","Name":"b"} would be read as either name.
type entry map[string]json.RawMessage

// shape is what a document's top level looks like.
type shape int

const (
	shapeArray  shape = iota // [tool...]
	shapeTools               // {"tools":[tool...]}
	shapeResult              // {"tools":[tool...], "nextCursor":...}
	shapeRPC                 // {"jsonrpc":..., "result":{"tools":[...]}}
	shapeSingle              // {"name":...}
)

var shapeText = [...]string{
	shapeArray:  "a JSON array of tools",
	shapeTools:  `an object with "tools"`,
	shapeResult: `an object with "tools" and other keys`,
	shapeRPC:    "a JSON-RPC response",
	shapeSingle: "one tool object",
}

// candidates lists the formats each shape may be, preferred first.
var candidates = [...][]string{
	shapeArray:  {FormatOpenAI, FormatAnthropic},
	shapeTools:  {FormatMCP, FormatNative},
	shapeResult: {FormatMCP},
	shapeRPC:    {FormatMCP},
	shapeSingle: {FormatMCP},
}

var formatText = map[string]string{
	FormatMCP:       `{"tools":[...]}, a JSON-RPC tools/list response, or one tool object`,
	FormatNative:    `{"tools":[...]}`,
	FormatOpenAI:    `a JSON array of {"type":"function",...} tools`,
	FormatAnthropic: "a JSON array of {name, input_schema} tools",
}

func (im *importer) parse(data []byte, file string) ([]Tool, error) {
	fail := func(index int, tool string, err error) ([]Tool, error) {
		return nil, &Error{File: file, Index: index, Tool: cut(tool), Err: err}
	}
	if len(data) > MaxFileBytes {
		return fail(-1, "", wrap(ErrTooLarge, "%d bytes, more than %d", len(data), MaxFileBytes))
	}
	if err := validateJSON(data); err != nil {
		return fail(-1, "", err.(*Error).Err)
	}
	sh, entries, idx, err := readShape(data)
	if err != nil {
		return fail(idx, "", err)
	}
	format, idx, err := im.choose(sh, entries)
	if err != nil {
		name := ""
		if idx >= 0 {
			name = entryName(entries[idx])
		}
		return fail(idx, name, err)
	}
	tools := make([]Tool, 0, len(entries))
	for i, e := range entries {
		index := i
		if sh == shapeSingle {
			index = -1
		}
		t, err := im.convert(format, e)
		if err != nil {
			return fail(index, entryName(e), err)
		}
		claimed := t.PolicyDigest // replaced by the one the store computes
		if err := im.add(t, file, index); err != nil {
			return nil, err
		}
		kept := im.b.tools[t.ID]
		if claimed != "" && claimed != kept.PolicyDigest {
			return fail(index, entryName(e), wrap(ErrInvalidTool, "policy_digest %q does not match the record's policy digest %s", cut(claimed), kept.PolicyDigest))
		}
		tools = append(tools, kept)
	}
	return tools, nil
}

// readShape classifies the document and splits out its tool entries. On an
// error about one entry it also returns that entry's index.
func readShape(data []byte) (shape, []entry, int, error) {
	data = bytes.TrimLeft(data, " \t\r\n")
	if data[0] == '[' {
		entries, idx, err := readEntries(data)
		return shapeArray, entries, idx, err
	}
	if data[0] != '{' {
		return 0, nil, -1, wrap(ErrFormat, "the document is %s, not an object or array", jsonKind(data[0]))
	}
	var top entry
	if err := json.Unmarshal(data, &top); err != nil {
		return 0, nil, -1, wrap(ErrFormat, "%v", err)
	}
	if list, ok := top["tools"]; ok {
		sh := shapeTools
		if len(top) > 1 { // only an MCP result carries more (nextCursor, _meta)
			sh = shapeResult
		}
		entries, idx, err := readEntries(list)
		return sh, entries, idx, err
	}
	_, rpc := top["jsonrpc"]
	if _, ok := top["error"]; ok && rpc {
		return 0, nil, -1, wrap(ErrFormat, "a JSON-RPC error response holds no tools")
	}
	if res, ok := top["result"]; ok {
		var r entry
		if err := json.Unmarshal(res, &r); err != nil {
			return 0, nil, -1, wrap(ErrFormat, "JSON-RPC result is not an object")
		}
		list, ok := r["tools"]
		if !ok {
			return 0, nil, -1, wrap(ErrFormat, `JSON-RPC result has no "tools"`)
		}
		entries, idx, err := readEntries(list)
		return shapeRPC, entries, idx, err
	}
	if _, ok := top["name"]; ok {
		return shapeSingle, []entry{top}, -1, nil
	}
	return 0, nil, -1, wrap(ErrFormat, `an object with neither "tools", a JSON-RPC "result", nor a tool "name"`)
}

func readEntries(list json.RawMessage) ([]entry, int, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(list, &raws); err != nil || isNull(list) {
		return nil, -1, wrap(ErrFormat, "the tool list is not a JSON array")
	}
	entries := make([]entry, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &entries[i]); err != nil || entries[i] == nil {
			return nil, i, wrap(ErrInvalidTool, "entry is not a JSON object")
		}
	}
	return entries, -1, nil
}

// choose picks the format of a document, or explains why none fits; the
// index is that of the entry at fault, or -1.
func (im *importer) choose(sh shape, entries []entry) (string, int, error) {
	if im.format != "" {
		if !slices.Contains(candidates[sh], im.format) {
			return "", -1, wrap(ErrFormat, "the document is %s, but %s is %s", shapeText[sh], im.format, formatText[im.format])
		}
		if i, why := misfit(im.format, entries); why != "" {
			return "", i, wrap(ErrFormat, "not a %s tool: %s", im.format, why)
		}
		return im.format, -1, nil
	}
	var reasons []string
	for _, f := range candidates[sh] {
		i, why := misfit(f, entries)
		if why == "" {
			return f, -1, nil
		}
		reasons = append(reasons, fmt.Sprintf("not %s (tools[%d] %s)", f, i, why))
	}
	return "", -1, wrap(ErrFormat, "the document is %s but fits no format: %s", shapeText[sh], strings.Join(reasons, "; "))
}

// Keys that mark an entry as belonging to another format.
var (
	notMCP       = []string{"input_schema", "parameters", "function", "id", "aliases", "schema_digest", "provenance", "source", "effect", "hints", "policy_digest"}
	notAnthropic = []string{"function", "parameters", "inputSchema", "annotations"}
	nativeKeys   = []string{"id", "name", "aliases", "description", "input_schema", "schema_digest", "provenance", "source", "effect", "hints", "policy_digest"}
)

// misfit returns the first entry that does not fit format f, and why.
func misfit(f string, entries []entry) (int, string) {
	for i, e := range entries {
		var why string
		switch f {
		case FormatMCP:
			why = hasAny(e, notMCP)
		case FormatAnthropic:
			if why = hasAny(e, notAnthropic); why == "" && isFunction(e) {
				why = `has "type": "function"`
			}
		case FormatOpenAI:
			if !isFunction(e) {
				why = `"type" is not "function"`
			}
		case FormatNative:
			for _, k := range slices.Sorted(maps.Keys(e)) {
				if !slices.Contains(nativeKeys, k) {
					why = fmt.Sprintf("has key %q", cut(k))
					break
				}
			}
		}
		if why != "" {
			return i, why
		}
	}
	return 0, ""
}

func hasAny(e entry, keys []string) string {
	for _, k := range keys {
		if _, ok := e[k]; ok {
			return fmt.Sprintf("has key %q", k)
		}
	}
	return ""
}

func isFunction(e entry) bool {
	s, err := stringField(e, "type")
	return err == nil && s == "function"
}

// entryName is the entry's tool name as far as it can be read, for errors.
func entryName(e entry) string {
	if s, _ := stringField(e, "name"); s != "" {
		return s
	}
	if f, err := objectField(e, "function"); err == nil && f != nil {
		s, _ := stringField(f, "name")
		return s
	}
	return ""
}

// convert builds the un-normalised Tool of one entry.
func (im *importer) convert(format string, e entry) (Tool, error) {
	t := Tool{Provenance: im.provenance, Source: im.source}
	var err error
	var schemaKey string
	switch format {
	case FormatMCP:
		schemaKey = "inputSchema"
		var h Hints
		if h, err = mcpHints(e); err == nil {
			t.Hints, t.Effect = &h, h.Effect()
		}
	case FormatOpenAI:
		if f, ok := e["function"]; ok {
			if e, err = asObject("function", f); err != nil {
				return Tool{}, err
			}
			if e == nil {
				return Tool{}, wrap(ErrInvalidTool, `"function" is null`)
			}
		}
		schemaKey = "parameters"
		t.Effect = EffectNonIdempotent
	case FormatAnthropic:
		typ, terr := stringField(e, "type")
		if terr != nil {
			return Tool{}, terr
		}
		if typ != "" && typ != "custom" {
			return Tool{}, wrap(ErrFormat, "anthropic tool type %q is a server or built-in tool; only custom tools are supported", cut(typ))
		}
		schemaKey = "input_schema"
		t.Effect = EffectNonIdempotent
	case FormatNative:
		schemaKey = "input_schema"
		err = nativeFields(e, &t)
	}
	if err != nil {
		return Tool{}, err
	}
	if t.Name, err = stringField(e, "name"); err != nil {
		return Tool{}, err
	}
	if t.Description, err = stringField(e, "description"); err != nil {
		return Tool{}, err
	}
	t.InputSchema = e[schemaKey]
	if t.ID == "" {
		if err := checkRawName(t.Name); err != nil {
			return Tool{}, err
		}
		if t.ID, err = MakeID(im.ns, t.Name); err != nil {
			return Tool{}, err.(*Error).Err
		}
	}
	return t, nil
}

// mcpHints reads an MCP tool's annotations (MCP specification 2025-06-18,
// ToolAnnotations) into Hints. Every hint that is absent or null takes the
// specification's default, which is also its most dangerous reading:
// readOnlyHint false, destructiveHint true, idempotentHint false,
// openWorldHint true. Keys are matched exactly, so a misspelt or
// differently cased hint is absent. A hint that is present with another
// JSON type than boolean, or annotations that are not an object, refuse the
// tool (ErrInvalidTool naming the field): a server that sends "true" or 1
// is not read as meaning anything. title and unknown annotations are not
// read.
func mcpHints(e entry) (Hints, error) {
	h := DefaultHints()
	ann, err := objectField(e, "annotations")
	if err != nil || ann == nil {
		return h, err
	}
	for _, f := range [...]struct {
		key string
		dst *bool
	}{
		{"readOnlyHint", &h.ReadOnly},
		{"destructiveHint", &h.Destructive},
		{"idempotentHint", &h.Idempotent},
		{"openWorldHint", &h.OpenWorld},
	} {
		v, present, err := boolField(ann, "annotations.", f.key)
		if err != nil {
			return Hints{}, err
		}
		if present {
			*f.dst = v
		}
	}
	return h.normalized(), nil
}

func nativeFields(e entry, t *Tool) error {
	var err error
	if t.ID, err = stringField(e, "id"); err != nil {
		return err
	}
	if raw, ok := e["aliases"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &t.Aliases); err != nil {
			return wrap(ErrInvalidTool, `"aliases" is not an array of strings`)
		}
	}
	if t.SchemaDigest, err = stringField(e, "schema_digest"); err != nil {
		return err
	}
	for _, f := range [...]struct {
		key string
		dst *string
	}{{"provenance", &t.Provenance}, {"source", &t.Source}} {
		v, err := stringField(e, f.key)
		if err != nil {
			return err
		}
		if v != "" {
			*f.dst = v
		}
	}
	effect, err := stringField(e, "effect")
	if err != nil {
		return err
	}
	t.Effect = Effect(effect)
	if t.Hints, err = nativeHints(e); err != nil {
		return err
	}
	t.PolicyDigest, err = stringField(e, "policy_digest")
	return err
}

// hintKeys are Hints' JSON names.
var hintKeys = []string{"read_only", "destructive", "idempotent", "open_world"}

// nativeHints reads a native record's hints, in Hints' JSON form; absent
// or null is nil (the record has none). As with MCP annotations, a missing
// or null hint takes the MCP default, its most dangerous reading, and a
// hint of another type refuses the tool; so does an unknown key, since
// the format has no other.
func nativeHints(e entry) (*Hints, error) {
	obj, err := objectField(e, "hints")
	if err != nil || obj == nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(hintKeys, k) {
			return nil, wrap(ErrInvalidTool, "\"hints\" has key %q", cut(k))
		}
	}
	h := DefaultHints()
	for i, dst := range [...]*bool{&h.ReadOnly, &h.Destructive, &h.Idempotent, &h.OpenWorld} {
		v, present, err := boolField(obj, "hints.", hintKeys[i])
		if err != nil {
			return nil, err
		}
		if present {
			*dst = v
		}
	}
	return &h, nil
}

// stringField returns e[key] as a string; absent or null is "".
func stringField(e entry, key string) (string, error) {
	raw, ok := e[key]
	if !ok || isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", wrap(ErrInvalidTool, "%q is %s, not a string", key, jsonKind(raw[0]))
	}
	return s, nil
}

// boolField returns e[key] as a bool and whether it is present; absent or
// null is (false, false). path prefixes key in errors.
func boolField(e entry, path, key string) (value, present bool, err error) {
	raw, ok := e[key]
	if !ok || isNull(raw) {
		return false, false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, false, wrap(ErrInvalidTool, "%q is %s, not a boolean", path+key, jsonKind(raw[0]))
	}
	return b, true, nil
}

// objectField returns e[key] as an entry; absent or null is nil.
func objectField(e entry, key string) (entry, error) {
	raw, ok := e[key]
	if !ok {
		return nil, nil
	}
	return asObject(key, raw)
}

func asObject(key string, raw json.RawMessage) (entry, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, wrap(ErrInvalidTool, "%q is %s, not an object", key, jsonKind(raw[0]))
	}
	var o entry
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, wrap(ErrInvalidTool, "%q: %v", key, err)
	}
	return o, nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// add validates t against the tools read so far and keeps it.
func (im *importer) add(t Tool, file string, index int) error {
	where := file
	if index >= 0 {
		where = fmt.Sprintf("%s tools[%d]", file, index)
	}
	where = strings.TrimSpace(where)
	err := im.b.Add(t)
	if err == nil {
		im.origin[t.ID] = where
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	// Name the tool as the file does.
	out := &Error{File: file, Index: index, Tool: e.Tool, Err: e.Err}
	if t.Name != "" {
		out.Tool = cut(t.Name)
	}
	if errors.Is(err, ErrDuplicateID) || errors.Is(err, ErrNameTaken) {
		for _, k := range keys(t) {
			if other, ok := im.b.names[k]; ok {
				out.Err = fmt.Errorf("%w (first defined at %s)", e.Err, im.origin[other])
				break
			}
		}
	}
	return out
}
