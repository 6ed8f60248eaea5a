package config

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/host/domain"
)

// upstreams are the MCP upstreams a domain var may read: name → its
// command, or nil for a url upstream.
type upstreams map[string][]string

// upstreamCommands merges the upstreams the caller gives (gatehost mcp's
// command after --) over the file's mcp.upstreams. Names are compared in
// lower case, as the file's keys are.
func upstreamCommands(given map[string][]string, file map[string]MCPUpstream) upstreams {
	out := upstreams{}
	for n, u := range file {
		out[strings.ToLower(n)] = u.Command
	}
	for n, c := range given {
		out[strings.ToLower(n)] = c
	}
	return out
}

// bindVars sets the catalog's variables from domains.NAME.vars (field):
// every variable the catalog declares must be set, and only those. A value
// is a string (a path variable's relative value is relative to the config
// file's directory), or {upstream: NAME, arg: N}: argument N of the MCP
// upstream NAME's command (0 is the program, -1 the last argument; a
// relative path is relative to the working directory, where gatehost mcp
// starts the upstream). An upstream that is not known here (gatehost
// check or serve, or gatehost mcp without that upstream) leaves the var
// unbound: the host then answers no capability that reads it, and the
// gate denies its calls. A var the config does not set takes the
// catalog's default, when it declares one.
func bindVars(field string, cat *domain.Catalog, vars map[string]any, rel func(string) string, ups upstreams) (*domain.Catalog, error) {
	declared := cat.Vars()
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if !slices.Contains(declared, name) {
			if len(declared) == 0 {
				return nil, fmt.Errorf("%s.%s: catalog %s declares no vars", field, name, cat.Name)
			}
			return nil, fmt.Errorf("%s.%s: catalog %s declares no var %s (it declares %s)", field, name, cat.Name, name, strings.Join(declared, ", "))
		}
	}
	values := map[string]string{}
	for _, name := range declared {
		f := field + "." + name
		raw, ok := vars[name]
		if !ok {
			raw = cat.VarDefault(name)
			ok = raw != nil
			f = "the default of " + f
		}
		if !ok {
			what := ""
			if d := cat.VarDescription(name); d != "" {
				what = " (" + d + ")"
			}
			return nil, fmt.Errorf("%s: required: catalog %s reads var %s%s; set it in the config", f, cat.Name, name, what)
		}
		val, bound, err := varValue(f, raw, ups)
		if err != nil {
			return nil, err
		}
		if !bound {
			continue
		}
		if cat.VarIsPath(name) && val != "" {
			if _, fromUpstream := raw.(map[string]any); fromUpstream {
				abs, err := filepath.Abs(val)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				val = abs
			} else {
				val = rel(val)
			}
		}
		values[name] = val
	}
	if len(values) == 0 {
		return cat, nil
	}
	out, err := cat.Bind(values)
	var ve *domain.VarError
	if errors.As(err, &ve) {
		return nil, fmt.Errorf("%s.%s: %s", field, ve.Name, ve.Reason)
	}
	return out, err
}

// varValue reads one var's config value; bound is false for an upstream
// argument whose upstream is not known here.
func varValue(f string, raw any, ups upstreams) (val string, bound bool, err error) {
	switch v := raw.(type) {
	case string:
		return v, true, nil
	case map[string]any:
		name, ok := v["upstream"].(string)
		argRaw, hasArg := v["arg"]
		if !ok || name == "" || !hasArg || len(v) != 2 {
			return "", false, fmt.Errorf("%s: want a string or {upstream: NAME, arg: N}, not %v", f, raw)
		}
		arg, ok := intOf(argRaw)
		if !ok {
			return "", false, fmt.Errorf("%s.arg: want an integer (0 the program, -1 the last argument), not %v", f, argRaw)
		}
		cmd, known := ups[strings.ToLower(name)]
		if !known {
			return "", false, nil
		}
		if len(cmd) == 0 {
			return "", false, fmt.Errorf("%s: upstream %s has no command (a url upstream has no arguments)", f, name)
		}
		i := arg
		if i < 0 {
			i += len(cmd)
		}
		if i < 0 || i >= len(cmd) {
			return "", false, fmt.Errorf("%s.arg: upstream %s's command has no argument %d (it is %q)", f, name, arg, cmd)
		}
		return cmd[i], true, nil
	}
	return "", false, fmt.Errorf("%s: want a string or {upstream: NAME, arg: N}, not %v", f, raw)
}

// intOf reads an integer as YAML, TOML or JSON decode it.
func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	}
	return 0, false
}
