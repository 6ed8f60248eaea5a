package catalog

import (
	"fmt"

	"github.com/gatehost/gatehost/internal/oneline"
	"github.com/gatehost/gatehost/internal/schemac"
	"github.com/gatehost/gatehost/internal/schemafind"
)

// SchemaError is a tool whose input schema does not compile as gates
// compile it (CheckSchemas).
type SchemaError struct {
	// Tool is the tool's wire name, cut to 128 bytes.
	Tool string
	// Err is the compiler's reason.
	Err error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("tool %s: input_schema does not compile: %s", e.Tool, oneline.Of(e.Err.Error()))
}

func (e *SchemaError) Unwrap() error { return e.Err }

// CheckSchemas compiles every tool's input schema as gates do (JSON Schema
// draft 2020-12 unless the schema names another draft, formats asserted,
// no remote references), so that a catalog no gate can use is refused when
// it is loaded rather than failing every run. The first tool whose schema
// does not compile is returned as a *SchemaError; nil means all compile.
func CheckSchemas(tools []Tool) error {
	for _, t := range tools {
		if err := compileSchema(t.InputSchema); err != nil {
			return &SchemaError{Tool: cut(t.Name), Err: err}
		}
	}
	return nil
}

// compileSchema compiles one self-contained schema. The compiler panics on
// some malformed schemas; that is a reason like any other. A schema that is
// not valid against its metaschema is reported as a value that does not
// match a schema: the metaschema, at the first violation.
func compileSchema(raw []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	_, err = schemac.Compile("tool.schema.json", raw)
	return schemafind.CompileError(err)
}
