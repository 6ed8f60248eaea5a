package domain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/gatehost/gatehost/host/datasource"
)

// synthView is a view-less query/get capability with an entity that a
// precondition or an effect reads. Its view selects the documents (rows)
// of the entity's collection (table) whose fields equal the capability's
// parameters; the collection is the first of Candidates the source has,
// chosen at Catalog.Prepare.
type synthView struct {
	capability string
	entity     string
	params     []string
}

// Collectioner is implemented by data sources that can list their
// collections (tables). Catalog.Prepare uses it to resolve the view of a
// view-less capability; without it, it tries each candidate view with the
// source's Prepare.
type Collectioner interface {
	Collections() []string
}

// Candidates are the collection names tried for the capability's entity,
// in order: the entity, its snake_case form, and that plus "s" (Order →
// Order, order, orders; PullRequest → PullRequest, pull_request,
// pull_requests).
func (s *synthView) Candidates() []string {
	sc := snakeCase(s.entity)
	var out []string
	for _, c := range []string{s.entity, sc, sc + "s"} {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// view is the view over collection: a document where and an SQL select,
// both matching every parameter.
func (s *synthView) view(collection string) *datasource.View {
	dv := &datasource.DocumentView{Collection: collection}
	var sql strings.Builder
	sql.WriteString("SELECT * FROM " + quoteIdent(collection))
	for i, p := range s.params {
		if dv.Where == nil {
			dv.Where = map[string]any{}
		}
		dv.Where[p] = "{" + p + "}"
		if i == 0 {
			sql.WriteString(" WHERE ")
		} else {
			sql.WriteString(" AND ")
		}
		sql.WriteString(quoteIdent(p) + " = :" + p)
	}
	return &datasource.View{Name: s.capability, Params: slices.Clone(s.params), Document: dv, SQL: sql.String()}
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// snakeCase turns CamelCase into snake_case ("HTTPRequest" → "http_request").
func snakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) {
			prevLower := i > 0 && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1]))
			acronymEnd := i > 0 && unicode.IsUpper(r[i-1]) && i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || acronymEnd {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// resolve finds the collection of s's view in src and prepares the view.
func (s *synthView) resolve(ctx context.Context, src datasource.DataSource) (*datasource.View, error) {
	cands := s.Candidates()
	if lister, ok := src.(Collectioner); ok {
		have := lister.Collections()
		for _, c := range cands {
			if slices.Contains(have, c) {
				vw := s.view(c)
				if err := src.Prepare(ctx, vw); err != nil {
					return nil, fmt.Errorf("the view made for %s over %q: %w: give the capability a view: NAME", s.entity, c, err)
				}
				return vw, nil
			}
		}
	} else {
		for _, c := range cands {
			if vw := s.view(c); src.Prepare(ctx, vw) == nil {
				return vw, nil
			}
		}
	}
	return nil, fmt.Errorf("%s names none of the data source's collections or tables (tried %v): give the capability a view: NAME", s.entity, cands)
}
