package host

// SchemaCompiles reports how many input schemas the schema capability has
// compiled in this process.
func SchemaCompiles() int64 { return compiledSchemas.Compiles() }
