package session_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/session"
)

func digestSet(core, activated int) *session.Set {
	s := &session.Set{ID: "dev", Version: 7, Core: map[string]session.Pin{}, Activated: map[string]session.Activation{}}
	for i := range core {
		s.Core[fmt.Sprintf("mcp.github:tool_%03d", i)] = session.Pin{
			SchemaDigest: fmt.Sprintf("%064x", i), PolicyDigest: fmt.Sprintf("%064x", i+1), Provenance: "mcp_config{github}"}
	}
	for i := range activated {
		tool := fmt.Sprintf("mcp.mail:tool_%03d", i)
		s.Activated[tool] = session.Activation{Provenance: "mcp_config{mail}", Grant: session.Grant{
			Session: "dev", Tool: tool, CatalogGeneration: 3, CatalogDigest: fmt.Sprintf("%064x", 9),
			SchemaDigest: fmt.Sprintf("%064x", i+2), PolicyDigest: fmt.Sprintf("%064x", i+3)}}
	}
	return s
}

// The digest is a function of the content alone: the same content built
// in another order has the same digest, and every member of the set, at
// any depth, changes it. The members are walked by reflection, so a member
// added to Set, Pin, Activation or Grant and left out of Digest fails here.
func TestSetDigest(t *testing.T) {
	base := digestSet(2, 2)
	d := base.Digest()
	assert.True(t, abi.IsSessionDigest(d), d)
	assert.Equal(t, "", (*session.Set)(nil).Digest())

	// The same content, maps filled in reverse order.
	same := &session.Set{ID: base.ID, Version: base.Version, Core: map[string]session.Pin{}, Activated: map[string]session.Activation{}}
	for _, k := range []string{"mcp.github:tool_001", "mcp.github:tool_000"} {
		same.Core[k] = base.Core[k]
	}
	for _, k := range []string{"mcp.mail:tool_001", "mcp.mail:tool_000"} {
		same.Activated[k] = base.Activated[k]
	}
	assert.Equal(t, d, same.Digest())
	assert.Equal(t, d, base.Clone().Digest())

	seen := map[string]string{d: "base"}
	changed := func(name string, s *session.Set) {
		t.Helper()
		got := s.Digest()
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: digest equals that of %s", name, prev)
		}
		seen[got] = name
	}
	// Every leaf of one core pin and one activation, and the set's own.
	for _, path := range leaves(reflect.TypeOf(session.Set{}), "") {
		s := base.Clone()
		mutate(t, s, path)
		changed(path, s)
	}
	// What the maps hold, not only what their entries hold.
	s := base.Clone()
	delete(s.Core, "mcp.github:tool_000")
	changed("a core pin removed", s)
	s = base.Clone()
	s.Activated["mcp.github:tool_000"] = base.Activated["mcp.mail:tool_000"]
	changed("an activation added", s)
	s = base.Clone()
	s.Activated["mcp.github:tool_000"] = session.Activation{Grant: session.Grant{Tool: "mcp.github:tool_000"}}
	delete(s.Core, "mcp.github:tool_000")
	changed("a core tool moved to the activations", s)
	// Lengths come first, so adjacent strings cannot trade bytes.
	a, b := digestSet(0, 0), digestSet(0, 0)
	a.Core["x"] = session.Pin{SchemaDigest: "ab", PolicyDigest: "c"}
	b.Core["x"] = session.Pin{SchemaDigest: "a", PolicyDigest: "bc"}
	assert.NotEqual(t, a.Digest(), b.Digest())
}

// leaves lists the dotted paths of typ's string and integer members, a
// map's values as "[]".
func leaves(typ reflect.Type, prefix string) []string {
	var out []string
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			out = append(out, leaves(typ.Field(i).Type, prefix+"."+typ.Field(i).Name)...)
		}
	case reflect.Map:
		out = append(out, leaves(typ.Elem(), prefix+"[]")...)
	default:
		out = append(out, prefix)
	}
	return out
}

// mutate changes the leaf at path in s: in every entry of a map on the
// way, as map values are copies.
func mutate(t *testing.T, s *session.Set, path string) {
	t.Helper()
	var walk func(v reflect.Value, rest string) reflect.Value
	walk = func(v reflect.Value, rest string) reflect.Value {
		if rest == "" {
			switch v.Kind() {
			case reflect.String:
				v.SetString(v.String() + "x")
			case reflect.Uint64:
				v.SetUint(v.Uint() + 1)
			default:
				t.Fatalf("%s: a member of kind %s; teach Digest and this test about it", path, v.Kind())
			}
			return v
		}
		if rest[:2] == "[]" {
			for _, k := range v.MapKeys() {
				e := reflect.New(v.Type().Elem()).Elem()
				e.Set(v.MapIndex(k))
				walk(e, rest[2:])
				v.SetMapIndex(k, e)
			}
			return v
		}
		name := rest[1:]
		next := ""
		for i := 1; i < len(rest); i++ {
			if rest[i] == '.' || rest[i] == '[' {
				name, next = rest[1:i], rest[i:]
				break
			}
		}
		walk(v.FieldByName(name), next)
		return v
	}
	walk(reflect.ValueOf(s).Elem(), path)
}

// BenchmarkSetDigest is the host's cost per run that reads a session, for
// sets of 1, 10 and 117 core tools; json is json.Marshal and SHA-256 of
// the same set, the way not taken.
func BenchmarkSetDigest(b *testing.B) {
	for _, n := range []int{1, 10, 117} {
		s := digestSet(n, 0)
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if s.Digest() == "" {
					b.Fatal("no digest")
				}
			}
		})
		b.Run(fmt.Sprintf("tools=%d/json", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf, err := json.Marshal(s)
				require.NoError(b, err)
				sha256.Sum256(buf)
			}
		})
	}
}
