package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/datasource"
)

// TestDomainSourceKeys: domains.NAME.source.keys declares the key fields
// of collections given as arrays, for a documents source from one file or
// one file per collection; sqlite refuses them, naming the field.
func TestDomainSourceKeys(t *testing.T) {
	dir := t.TempDir()
	catalog, err := filepath.Abs("../testdata/domains/retail/domain.yaml")
	require.NoError(t, err)
	files := map[string]string{
		"db.json":    `{"plans":[{"plan_id":"p1","fee":5},{"plan_id":"p2"}],"users":{"u1":{"plan":"p1"}}}`,
		"plans.json": `[{"plan_id":"p1","fee":5}]`,
		"dup.json":   `[{"plan_id":"p1"},{"plan_id":"p1"}]`,
		"users.json": `{"u1":{"plan":"p1"}}`,
		"retail.db":  "",
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	cases := []struct {
		name   string
		source string
		err    string
	}{
		{name: "one file", source: "{path: db.json, keys: {plans: plan_id}}"},
		{name: "one file per collection", source: "{kind: documents, collections: {plans: plans.json, users: users.json}, keys: {plans: plan_id}}"},
		{name: "array without a key", source: "{path: db.json}",
			err: "domains.retail.source.path: datasource: " + filepath.Join(dir, "db.json") + ": bad collection keys: collection plans is an array"},
		{name: "repeated key", source: "{collections: {plans: dup.json}, keys: {plans: plan_id}}",
			err: `domains.retail.source.collections: datasource: ` + filepath.Join(dir, "dup.json") + `: bad collection keys: collection plans: element 1: key plan_id "p1" repeats element 0`},
		{name: "key for a collection not in the data", source: "{path: db.json, keys: {plans: plan_id, lines: line_id}}",
			err: "domains.retail.source.path: datasource: " + filepath.Join(dir, "db.json") + ": bad collection keys: a key is declared for collection lines"},
		{name: "sqlite refuses keys", source: "{kind: sqlite, path: retail.db, keys: {plans: plan_id}}",
			err: "domains.retail.source.keys: sqlite takes no keys"},
		{name: "keys not a map", source: "{path: db.json, keys: [plan_id]}", err: "domains.retail.source.keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "gatehost.yaml")
			body := fmt.Sprintf("event_log: {path: events.jsonl}\ndomains:\n  retail:\n    catalog: %s\n    source: %s\n", catalog, c.source)
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			l, err := Load(p)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			src, ok := l.Host.Domains["retail"].Source.(*datasource.Documents)
			require.True(t, ok)
			assert.Equal(t, []string{"plans", "users"}, src.Collections())
			rows, err := src.Rows(context.Background(), &datasource.View{Name: "plan", Params: []string{"id"},
				Document: &datasource.DocumentView{Collection: "plans", ID: "{id}", Fields: map[string]string{"fee": "fee"}}},
				map[string]any{"id": "p1"})
			require.NoError(t, err)
			assert.Equal(t, []datasource.Row{{"fee": 5.0}}, rows)
		})
	}
}
