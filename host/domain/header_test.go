package domain_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/datasource/sqlsource"
	"github.com/gatehost/gatehost/host/domain"
)

const headerless = "capabilities:\n  r: {kind: get}\n"

func TestCatalogName(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) string {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	cases := []struct{ name, path, body, want, wantErr string }{
		{"file name", "banking.yaml", headerless, "banking", ""},
		{"directory of domain.yaml", "retail/domain.yaml", headerless, "retail", ""},
		{"json file", "shop.json", `{"capabilities": {"r": {"kind": "get"}}}`, "shop", ""},
		{"header wins", "other.yaml", "domain: named\n" + headerless, "named", ""},
		{"file name not a name", "my shop.yaml", headerless, "", `domain: absent, and the file's name "my shop" is not a name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat, err := domain.Load(write(c.path, c.body))
			if c.wantErr != "" {
				require.ErrorIs(t, err, domain.ErrInvalid)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, cat.Name)
			assert.Equal(t, 1, cat.Version, "no version is version 1")
		})
	}

	c, err := domain.ParseNamed([]byte(headerless), "given")
	require.NoError(t, err)
	assert.Equal(t, "given", c.Name)
	_, err = domain.Parse([]byte(headerless))
	require.ErrorIs(t, err, domain.ErrInvalid)
	assert.Equal(t, "domain: domain: required when the catalog is not read from a file", err.Error())
}

// TestHeaderlessRFC: the RFC's v1 shapes without header load, and a
// precondition reads a view-less get capability through the view made from
// its entity once the catalog is prepared against a document source.
func TestHeaderlessRFC(t *testing.T) {
	ctx := context.Background()
	c, err := domain.Load("../../testdata/domains/rfc/headerless/domain.yaml")
	require.NoError(t, err)
	assert.Equal(t, "headerless", c.Name)
	approve, ok := c.Capability("CreditLimitRequest_approve")
	require.True(t, ok)
	assert.Equal(t, "CreditLimitRequest_get", approve.Preconditions[0].Capability)

	_, ok = c.CapabilityView("CreditLimitRequest_get")
	assert.False(t, ok, "the view is made at Prepare")
	src, err := datasource.OpenDocuments("../../testdata/domains/rfc/db.json")
	require.NoError(t, err)
	require.NoError(t, c.Prepare(ctx, src))
	v, ok := c.CapabilityView("CreditLimitRequest_get")
	require.True(t, ok)
	assert.Equal(t, "credit_limit_requests", v.Document.Collection)
	rows, err := src.Rows(ctx, v, map[string]any{"request_id": "clr_1"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "PENDING", rows[0]["status"])
	require.NoError(t, c.Prepare(ctx, src), "preparing again against the same source")
}

// sourceOnly hides every method of a source but DataSource's, such as
// Collections.
type sourceOnly struct{ datasource.DataSource }

// listing claims collections its source may not have.
type listing struct {
	sourceOnly
	names []string
}

func (l listing) Collections() []string { return l.names }

const synthCatalog = `
domain: d
capabilities:
  get_order: {kind: get, entity: %s, parameters: [order_id]}
  cancel:
    kind: action
    parameters: [order_id]
    preconditions:
      - {id: pending, capability: get_order, bind: {order_id: {param: order_id}}, require: {match: {field: status, equals: pending}}, message: m}
`

func TestViewlessCapabilityPrepare(t *testing.T) {
	ctx := context.Background()
	docs := datasource.NewDocuments(map[string]map[string]any{
		"orders":        {"#1": map[string]any{"order_id": "#1", "status": "pending"}, "#2": map[string]any{"order_id": "#2", "status": "done"}},
		"http_requests": {},
	})
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE orders (order_id TEXT PRIMARY KEY, status TEXT); INSERT INTO orders VALUES ('#1', 'pending'), ('#2', 'done');`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	sqlSrc, err := sqlsource.OpenSQLite(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sqlSrc.Close() })

	cases := []struct {
		name, entity   string
		src            datasource.DataSource
		wantCollection string
		wantErr        string
	}{
		{"collections listed", "Order", docs, "orders", ""},
		{"entity as is", "orders", docs, "orders", ""},
		{"acronym", "HTTPRequest", docs, "http_requests", ""},
		{"no Collections method: tries each", "Order", sourceOnly{docs}, "orders", ""},
		{"sql table", "Order", sqlSrc, "orders", ""},
		{"none", "Invoice", docs, "", `capability get_order: entity: Invoice names none of the data source's ` +
			`collections or tables (tried [Invoice invoice invoices]): give the capability a view: NAME`},
		{"none without Collections", "Invoice", sourceOnly{docs}, "", `(tried [Invoice invoice invoices]): give the capability a view: NAME`},
		{"listed but not preparable", "Order", listing{sourceOnly{datasource.NewDocuments(nil)}, []string{"orders"}}, "",
			`capability get_order: entity: the view made for Order over "orders": view get_order: unknown collection "orders"`},
		{"none in sql", "PullRequest", sqlSrc, "", `[PullRequest pull_request pull_requests]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat, err := domain.Parse([]byte(strings.Replace(synthCatalog, "%s", c.entity, 1)))
			require.NoError(t, err)
			err = cat.Prepare(ctx, c.src)
			if c.wantErr != "" {
				require.ErrorIs(t, err, domain.ErrInvalid)
				assert.Contains(t, err.Error(), c.wantErr)
				_, ok := cat.CapabilityView("get_order")
				assert.False(t, ok)
				return
			}
			require.NoError(t, err)
			v, ok := cat.CapabilityView("get_order")
			require.True(t, ok)
			assert.Equal(t, c.wantCollection, v.Document.Collection)
			if c.wantCollection == "orders" {
				rows, err := c.src.Rows(ctx, v, map[string]any{"order_id": "#1"})
				require.NoError(t, err)
				require.Len(t, rows, 1)
				assert.Equal(t, "pending", rows[0]["status"])
			}
		})
	}

	t.Run("two sources, two collections", func(t *testing.T) {
		cat, err := domain.Parse([]byte(strings.Replace(synthCatalog, "%s", "Order", 1)))
		require.NoError(t, err)
		require.NoError(t, cat.Prepare(ctx, docs))
		other := datasource.NewDocuments(map[string]map[string]any{"order": {}})
		err = cat.Prepare(ctx, other)
		require.ErrorIs(t, err, domain.ErrInvalid)
		assert.Contains(t, err.Error(), `resolved to "orders" for another data source and to "order" for this one`)
	})
}
