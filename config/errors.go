package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/editdist"
	"github.com/gatehost/gatehost/internal/oneline"
)

// decodeError turns a config decoding error into one line naming each
// offending key as a dotted path, such as "unknown key
// pipelines.admission.stages[0].retries". A bad value that came from a
// GATEHOST_* variable names the variable and its value instead of the file.
func decodeError(file string, err error) error {
	var fromFile, fromEnv []string
	for _, e := range leaves(err) {
		var de *mapstructure.DecodeError
		if !errors.As(e, &de) {
			fromFile = append(fromFile, oneline.Of(e.Error()))
			continue
		}
		key, reason := dotted(de.Name()), oneline.Of(de.Unwrap().Error())
		if key == reflect.TypeFor[fileConfig]().String() {
			key = "" // mapstructure ≥ 2.5 names the root by its type
		}
		if keys, ok := strings.CutPrefix(reason, "has invalid keys: "); ok {
			for _, k := range strings.Split(keys, ", ") {
				fromFile = append(fromFile, unknownKey(key, k))
			}
			continue
		}
		if slices.Contains(envKeys, key) {
			if v := os.Getenv(envName(key)); v != "" {
				fromEnv = append(fromEnv, fmt.Sprintf("%s=%q: %s", envName(key), v, reason))
				continue
			}
		}
		if key != "" {
			reason = key + ": " + reason
		}
		fromFile = append(fromFile, reason)
	}
	parts := fromEnv
	if len(fromFile) > 0 {
		parts = append(parts, fmt.Sprintf("config %s: %s", file, strings.Join(fromFile, "; ")))
	}
	return errors.New(strings.Join(parts, "; "))
}

// unknownKey says that key k under parent (a dotted path, "" for the
// top level) is unknown, with the accepted key closest to it: `unknown key
// "pipelnes"; did you mean "pipelines"?`.
func unknownKey(parent, k string) string {
	full, prefix := k, ""
	if parent != "" {
		prefix = parent + "."
		full = prefix + k
	}
	msg := fmt.Sprintf("unknown key %q", full)
	if c, ok := editdist.Closest(k, keysAt(parent)); ok {
		msg += fmt.Sprintf("; did you mean %q?", prefix+c)
	}
	return msg
}

// keysAt lists the keys the config file accepts at a dotted path
// ("pipelines.plan.stages[0]"), nil where the path is no section of
// named keys.
func keysAt(path string) []string {
	t := reflect.TypeFor[fileConfig]()
	var segs []string
	if path != "" {
		for _, part := range strings.Split(path, ".") {
			name, _, _ := strings.Cut(part, "[")
			segs = append(segs, name)
			for range strings.Count(part, "[") { // an element of a list
				segs = append(segs, "[]")
			}
		}
	}
	for _, seg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByKey(t, seg)
			if !ok {
				return nil
			}
			t = f.Type
		case reflect.Map, reflect.Slice, reflect.Array:
			t = t.Elem()
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// fieldByKey is t's field whose mapstructure name is key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// leaves flattens joined errors and decode errors that wrap joined ones
// (mapstructure names every nested error by its full path already).
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	if de, ok := err.(*mapstructure.DecodeError); ok {
		switch de.Unwrap().(type) {
		case interface{ Unwrap() []error }, *mapstructure.DecodeError:
			return leaves(de.Unwrap())
		}
	}
	return []error{err}
}

// dotted rewrites mapstructure's "pipelines[admission].stages[0]" as
// "pipelines.admission.stages[0]".
func dotted(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '[' {
			b.WriteByte(p[i])
			continue
		}
		j := strings.IndexByte(p[i:], ']')
		if j < 0 {
			b.WriteString(p[i:])
			break
		}
		inner := p[i+1 : i+j]
		if strings.Trim(inner, "0123456789") == "" {
			b.WriteString(p[i : i+j+1])
		} else {
			b.WriteString("." + inner)
		}
		i += j
	}
	return b.String()
}

// HostError names the config file and the key of an error from host.New
// (or Host.Warm) given l.Host: "config F: pipelines.p.stages[0]: reason".
// The message is one line; err stays wrapped, for errors.Is and errors.As.
func (l *Loaded) HostError(err error) error {
	file := l.File
	var ce *host.ConfigError
	if errors.As(err, &ce) {
		msg := ce.Field + ": " + ce.Reason
		if ce.Err != nil {
			msg += ": " + ce.Err.Error()
		}
		return &namedError{fmt.Sprintf("config %s: %s", file, oneline.Of(msg)), err}
	}
	var le *host.LoadError
	if errors.As(err, &le) {
		field := "plugins." + le.Plugin
		switch {
		case errors.Is(err, host.ErrReadModule):
			field = pluginKey(le.Plugin, l.Builtins)
		case errors.Is(err, host.ErrSHA256Mismatch):
			field += ".sha256"
		case le.Stage != "":
			field = "stage " + le.Stage + " of " + field
		}
		return &namedError{fmt.Sprintf("config %s: %s: %s", file, field, oneline.Of(err.Error())), err}
	}
	return &namedError{fmt.Sprintf("config %s: %s", file, oneline.Of(err.Error())), err}
}

// namedError is an error of the host's, reworded to name the config file
// and key.
type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }
