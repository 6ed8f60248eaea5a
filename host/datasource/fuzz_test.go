package datasource_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/datasource"
)

// FuzzApply: effects decoded from untrusted JSON (a guest's query.rows
// overlay) never panic Apply, never change the source, and either fail with
// ErrBadEffect or ErrEffect or give documents that read back, and that a
// further overlay leaves unchanged in turn.
func FuzzApply(f *testing.F) {
	for _, s := range []string{
		`[{"collection":"orders","id":"#1","set":{"status":"cancelled","payments.1.pm":"x","payments.2":{"pm":"y"}}}]`,
		`[{"collection":"orders","id":"#9","set":{"a.b.c":1,"a.b":{"d":[1,2]},"a.b.d.2":3}}]`,
		`[{"collection":"orders","id":"#1","set":{"legs.0.fn.x":1}},{"collection":"users","id":"u1","set":{"methods.card_1":null}}]`,
		`[{"collection":"orders","id":"#1","set":{"payments.00.pm":"z","payments.9":1}}]`,
		`[{"collection":"users","id":"u1","set":{"orders.3":"#3","orders.0":"#0","counts.1.x":{}}},{"collection":"users","id":"u1","set":{"counts.1.x.y":true}}]`,
		`[{"collection":"nope","id":"x","set":{"a":1}}]`,
		`[{"collection":"orders","id":"","set":{}}]`,
		`[{"collection":"orders","id":"#1","set":{"":1,"a..b":2,"*.#":3}}]`,
	} {
		f.Add([]byte(s))
	}
	src := fixture()
	before := snapshot(f, src)
	f.Fuzz(func(t *testing.T, data []byte) {
		var effects []abi.Effect
		if json.Unmarshal(data, &effects) != nil {
			return
		}
		got, err := src.Apply(effects)
		require.Equal(t, before, snapshot(t, src), "the source changed")
		if err != nil {
			require.Nil(t, got)
			require.True(t, errors.Is(err, datasource.ErrBadEffect) || errors.Is(err, datasource.ErrEffect), "%v", err)
			return
		}
		after := snapshot(t, got)
		_, err = json.Marshal(after)
		require.NoError(t, err)
		again, err := got.Apply(effects)
		assert.Equal(t, after, snapshot(t, got), "the overlay changed under a further overlay")
		if err == nil {
			snapshot(t, again)
		}
	})
}
