// Package datasource is where the host reads the rows that domain
// preconditions test: a DataSource evaluates a named, parameterized View.
// Two sources ship: Documents, an in-memory JSON-document store of
// collections keyed by id (the shape of the tau2 db.json files), and
// sqlsource.SQL, a database/sql source for SQLite (modernc.org/sqlite, pure
// Go) whose views are parameterized SQL with named binds. Embedders implement DataSource for
// their own stores.
//
// A source never guesses: an unbound or unexpected parameter, a view the
// source cannot evaluate, a read error or too many rows is an error, and the
// gate turns every error into a denial.
package datasource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Row is one result row: field name → JSON value (string, float64 or int64,
// bool, nil is never stored: an absent field has no key, []any,
// map[string]any).
type Row = map[string]any

// View is a named read with named parameters. A view carries the definition
// for each source kind it supports; a source uses its own and refuses a view
// without one.
type View struct {
	// Name is the view's name in its domain catalog.
	Name string `json:"-"`
	// Params are the names every evaluation must bind, no more, no less.
	Params []string `json:"params,omitempty"`
	// Document is the definition for the JSON-document source.
	Document *DocumentView `json:"document,omitempty"`
	// SQL is the definition for SQL sources: one SELECT whose named binds
	// (:name) are exactly Params. Each column is a row field; NULL is an
	// absent field.
	SQL string `json:"sql,omitempty"`
}

// DataSource evaluates views. Implementations must be safe for concurrent
// use.
type DataSource interface {
	// Prepare reports, at load time, whether the source can evaluate v (a
	// missing definition, an unknown collection, SQL that does not
	// compile). It may cache what it prepares.
	Prepare(ctx context.Context, v *View) error
	// Rows evaluates v with params, which must bind exactly v.Params. At
	// most MaxRows rows are returned; more is ErrTooManyRows.
	Rows(ctx context.Context, v *View, params map[string]any) ([]Row, error)
	// Close releases the source.
	Close() error
}

// MaxRows caps the rows one evaluation may return.
const MaxRows = 1000

// Errors for errors.Is.
var (
	// ErrUnbound: a view parameter has no value, or a value was given for
	// a name that is not a parameter.
	ErrUnbound = errors.New("unbound parameter")
	// ErrUnsupported: the source cannot evaluate this view (no definition
	// of its kind).
	ErrUnsupported = errors.New("view not supported by this source")
	// ErrTooManyRows: the view has more than MaxRows rows.
	ErrTooManyRows = errors.New("too many rows")
)

// CheckParams returns an error wrapping ErrUnbound unless params bind
// exactly v.Params. DataSource implementations call it first in Rows.
func CheckParams(v *View, params map[string]any) error {
	for _, p := range v.Params {
		if _, ok := params[p]; !ok {
			return fmt.Errorf("view %s: %w %q", v.Name, ErrUnbound, p)
		}
	}
	var extra []string
	for k := range params {
		if !slices.Contains(v.Params, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("view %s: %w: %q is not a parameter (parameters: %v)", v.Name, ErrUnbound, extra[0], v.Params)
	}
	return nil
}
