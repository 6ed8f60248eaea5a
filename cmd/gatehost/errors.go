package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/schemac"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// invalidKeys matches mapstructure's "'pipelines[a].stages[0]' has invalid
// keys: retries, x".
var invalidKeys = regexp.MustCompile(`^'([^']*)' has invalid keys: (.*)$`)

// decodeError turns a config decoding error into one line naming each
// offending key as a dotted path, such as "unknown key
// pipelines.admission.stages[0].retries".
func decodeError(err error) error {
	errs := []error{err}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	var parts []string
	for _, e := range errs {
		msg := oneLine(e.Error())
		if m := invalidKeys.FindStringSubmatch(msg); m != nil {
			prefix := dotted(m[1])
			for _, k := range strings.Split(m[2], ", ") {
				if prefix != "" {
					k = prefix + "." + k
				}
				parts = append(parts, "unknown key "+k)
			}
			continue
		}
		parts = append(parts, msg)
	}
	return errors.New(strings.Join(parts, "; "))
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

// hostError names the config file and the field of an error from host.New.
func hostError(file string, err error) error {
	var ce *host.ConfigError
	if errors.As(err, &ce) {
		msg := ce.Field + ": " + ce.Reason
		if ce.Err != nil {
			msg += ": " + ce.Err.Error()
		}
		return fmt.Errorf("config %s: %s", file, oneLine(msg))
	}
	var le *host.LoadError
	if errors.As(err, &le) {
		field := "plugins." + le.Plugin
		switch {
		case errors.Is(err, host.ErrReadModule):
			field += ".path"
		case errors.Is(err, host.ErrSHA256Mismatch):
			field += ".sha256"
		case le.Stage != "":
			field = "stage " + le.Stage + " of " + field
		}
		return fmt.Errorf("config %s: %s: %s", file, field, oneLine(err.Error()))
	}
	return fmt.Errorf("config %s: %s", file, oneLine(err.Error()))
}

// checkSchemas compiles every tool's input schema, so that a catalog gates
// cannot use is refused at the edge rather than failing every run.
func checkSchemas(tools []catalog.Tool) (err error) {
	for _, t := range tools {
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("tool %s: input_schema does not compile: %v", t.Name, r)
				}
			}()
			if cerr := compileToolSchema(t.InputSchema); cerr != nil {
				err = fmt.Errorf("tool %s: input_schema does not compile: %s", t.Name, oneLine(cerr.Error()))
			}
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// oneLine joins the lines of a multi-line message.
func oneLine(s string) string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	return strings.Join(fields, "; ")
}

// compileToolSchema compiles a tool's input schema as gates do: draft
// 2020-12 unless it names another, self-contained.
func compileToolSchema(raw []byte) error {
	_, err := schemac.Compile("tool.schema.json", raw)
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err
	}
	return err
}
