// Package sqlsource is a datasource.DataSource over database/sql, with
// OpenSQLite for SQLite files (modernc.org/sqlite, pure Go). It is a
// package of its own so that programs without SQL views do not link a
// database engine.
package sqlsource

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/internal/safefile"
)

// SQL is a datasource.DataSource over a database/sql database; OpenSQLite opens one on
// SQLite. A view's SQL is one SELECT with named binds (:name); each column
// is a row field, NULL an absent field, and a BLOB a string. Safe for
// concurrent use.
type SQL struct {
	db *sql.DB

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // by SQL text
}

// OpenSQLite opens the SQLite database file at path read-only: a gate reads
// application state, it never writes it. The path must name a regular file
// (symbolic links are followed): a named pipe or a device is refused before
// SQLite opens it, which could block or read without end.
func OpenSQLite(ctx context.Context, path string) (*SQL, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("datasource: sqlite: %w", err)
	}
	f.Close()
	db, err := sql.Open("sqlite", "file:"+uriPath.Replace(path)+"?mode=ro&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("datasource: sqlite %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("datasource: sqlite %s: %w", path, err)
	}
	return NewSQL(db), nil
}

// uriPath escapes what would end a SQLite URI's path
// (https://sqlite.org/uri.html): a '?' or '#' in a file name must not add
// parameters (mode=rw) or cut the name short.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// NewSQL returns a source over db, which it closes on Close. Named binds
// must be supported by db's driver.
func NewSQL(db *sql.DB) *SQL { return &SQL{db: db, stmts: map[string]*sql.Stmt{}} }

var bindRE = regexp.MustCompile(`[:@$]([A-Za-z_][A-Za-z0-9_]*)`)

// Prepare implements DataSource: the view must have SQL whose named binds
// are exactly its Params, and the statement must compile.
func (s *SQL) Prepare(ctx context.Context, v *datasource.View) error {
	_, err := s.stmt(ctx, v)
	return err
}

func (s *SQL) stmt(ctx context.Context, v *datasource.View) (*sql.Stmt, error) {
	if v.SQL == "" {
		return nil, fmt.Errorf("view %s: %w: no sql definition", v.Name, datasource.ErrUnsupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stmts[v.SQL]; ok {
		return st, nil
	}
	var binds []string
	for _, m := range bindRE.FindAllStringSubmatch(v.SQL, -1) {
		if !slices.Contains(binds, m[1]) {
			binds = append(binds, m[1])
		}
	}
	for _, b := range binds {
		if !slices.Contains(v.Params, b) {
			return nil, fmt.Errorf("view %s: sql binds :%s, which is not a parameter (parameters: %v)", v.Name, b, v.Params)
		}
	}
	for _, p := range v.Params {
		if !slices.Contains(binds, p) {
			return nil, fmt.Errorf("view %s: parameter %s is not bound in the sql", v.Name, p)
		}
	}
	st, err := s.db.PrepareContext(ctx, v.SQL)
	if err != nil {
		return nil, fmt.Errorf("view %s: sql: %w", v.Name, err)
	}
	s.stmts[v.SQL] = st
	return st, nil
}

// Rows implements DataSource.
func (s *SQL) Rows(ctx context.Context, v *datasource.View, params map[string]any) ([]datasource.Row, error) {
	if err := datasource.CheckParams(v, params); err != nil {
		return nil, err
	}
	st, err := s.stmt(ctx, v)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, len(v.Params))
	for _, p := range v.Params {
		val := params[p]
		switch val.(type) {
		case string, float64, int64, bool:
		default:
			return nil, fmt.Errorf("view %s: parameter %s is %T; SQL binds take a string, number or boolean", v.Name, p, val)
		}
		args = append(args, sql.Named(p, val))
	}
	rs, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("view %s: %w", v.Name, err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, fmt.Errorf("view %s: %w", v.Name, err)
	}
	rows := []datasource.Row{}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if len(rows) == datasource.MaxRows {
			return nil, fmt.Errorf("view %s: %w (more than %d)", v.Name, datasource.ErrTooManyRows, datasource.MaxRows)
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("view %s: %w", v.Name, err)
		}
		row := datasource.Row{}
		for i, c := range cols {
			switch x := vals[i].(type) {
			case nil:
			case []byte:
				row[c] = string(x)
			default:
				row[c] = x
			}
		}
		rows = append(rows, row)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("view %s: %w", v.Name, err)
	}
	return rows, nil
}

// Tables lists the database's tables and views by name, sorted, without
// SQLite's own (sqlite_*). It reads SQLite's schema table; on another
// database it is an error.
func (s *SQL) Tables(ctx context.Context) ([]string, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT name FROM sqlite_schema
		WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("datasource: sql: listing tables: %w", err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var name string
		if err := rs.Scan(&name); err != nil {
			return nil, fmt.Errorf("datasource: sql: listing tables: %w", err)
		}
		out = append(out, name)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("datasource: sql: listing tables: %w", err)
	}
	slices.Sort(out) // by Go's byte order, whatever the database's collation
	return out, nil
}

// Collections lists the tables and views (Tables) for a catalog resolving a
// capability's entity to a table. A database whose tables cannot be listed
// has none: nothing then resolves, which the catalog reports.
func (s *SQL) Collections() []string {
	out, err := s.Tables(context.Background())
	if err != nil {
		return nil
	}
	return out
}

// Close implements DataSource.
func (s *SQL) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.mu.Unlock()
	return s.db.Close()
}
