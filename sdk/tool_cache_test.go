package sdk

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// pinnedScripted is a scriptedHost pinned to a run, as the module's Host
// is during a run.
type pinnedScripted struct {
	*scriptedHost
	run runPins
}

func (h pinnedScripted) pins() runPins { return h.run }

// generationScripted is a scriptedHost pinned to a catalog generation.
func generationScripted(sh *scriptedHost, gen uint64) pinnedScripted {
	return pinnedScripted{sh, runPins{catalog: true, generation: gen}}
}

func TestCatalogGetRemembersAnswersOfAGeneration(t *testing.T) {
	const d = "1111111111111111111111111111111111111111111111111111111111111111"
	found := `{"result":{"found":true,"tool":{"id":"x:t","name":"t","aliases":["a"],"hints":{"read_only":true,"destructive":false,"idempotent":true,"open_world":false},"schema_digest":"` + d + `","input_schema":{"type":"object"}}}}`
	found2 := `{"result":{"found":true,"tool":{"id":"x:t2","name":"t","schema_digest":"` + d + `","input_schema":{"type":"object"}}}}`
	notFound := `{"result":{"found":false}}`
	denied := `{"error":{"code":"capability_denied","message":"no"}}`
	type lookup struct {
		gen     uint64
		pinned  bool
		name    string
		answer  string // "" when the host must not be asked
		wantID  string // "" for not found
		wantErr bool
	}
	tests := []struct {
		name    string
		lookups []lookup
	}{
		{"the same generation asks once", []lookup{{1, true, "t", found, "x:t", false}, {1, true, "t", "", "x:t", false}}},
		{"not found is remembered too", []lookup{{1, true, "u", notFound, "", false}, {1, true, "u", "", "", false}}},
		{"another generation asks again", []lookup{{1, true, "t", found, "x:t", false}, {2, true, "t", found2, "x:t2", false}, {2, true, "t", "", "x:t2", false}}},
		{"back to an older generation asks again", []lookup{{2, true, "t", found2, "x:t2", false}, {1, true, "t", found, "x:t", false}}},
		{"an error is not remembered", []lookup{{1, true, "t", denied, "", true}, {1, true, "t", found, "x:t", false}}},
		{"a native host is never answered from memory", []lookup{{1, false, "t", found, "x:t", false}, {1, false, "t", found2, "x:t2", false}}},
		{"another name asks", []lookup{{1, true, "t", found, "x:t", false}, {1, true, "v", notFound, "", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools = toolCache{}
			schemas = schemaCache{m: map[string]knownSchema{}}
			for i, l := range tc.lookups {
				sh := &scriptedHost{}
				if l.answer != "" {
					sh.answers = []string{l.answer}
				}
				var h Host = sh
				if l.pinned {
					h = generationScripted(sh, l.gen)
				}
				tool, ok, err := CatalogGet(h, l.name)
				assert.Len(t, sh.answers, 0, "lookup %d: unused answers", i)
				if l.wantErr {
					require.Error(t, err, "lookup %d", i)
					continue
				}
				require.NoError(t, err, "lookup %d", i)
				assert.Equal(t, l.wantID != "", ok, "lookup %d", i)
				assert.Equal(t, l.wantID, tool.ID, "lookup %d", i)
			}
		})
	}
}

// A gate changing the tool it was given changes nothing the next run sees.
func TestCatalogGetRememberedToolIsACopy(t *testing.T) {
	tools = toolCache{}
	const d = "1111111111111111111111111111111111111111111111111111111111111111"
	sh := &scriptedHost{answers: []string{`{"result":{"found":true,"tool":{"id":"x:t","name":"t","aliases":["a"],"hints":{"read_only":true,"destructive":false,"idempotent":true,"open_world":false},"schema_digest":"` + d + `"}}}`}}
	h := generationScripted(sh, 3)
	tool, _, err := CatalogGet(h, "t")
	require.NoError(t, err)
	tool.Aliases[0], tool.Hints.ReadOnly = "changed", false
	again, _, err := CatalogGet(h, "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, again.Aliases)
	assert.True(t, again.Hints.ReadOnly)
}

// pinnerHost becomes a pinnedScripted for the run.
type pinnerHost struct{ *scriptedHost }

func (h pinnerHost) pinRun(p runPins) Host { return pinnedScripted{h.scriptedHost, p} }

// Handle pins a pinnable Host to the request's catalog generation when the
// run is granted the catalog.
func TestHandlePinsTheRunsGeneration(t *testing.T) {
	tools = toolCache{}
	var got Host
	g := &Gate{Evaluate: func(_ context.Context, req Request) (abi.Response, error) {
		got = req.Host
		return abi.Response{Verdict: abi.Accepted, Basis: "b"}, nil
	}}
	sh := &scriptedHost{}
	const granted = `{"abi_version":1,"subject_kind":"tool_call","subject":{},"context":{"catalog_generation":42,"now":"2026-01-01T00:00:00Z","capabilities":["session","catalog"]}}`
	const notGranted = `{"abi_version":1,"subject_kind":"tool_call","subject":{},"context":{"catalog_generation":42,"now":"2026-01-01T00:00:00Z","capabilities":["session"]}}`
	tests := []struct {
		name       string
		host       Host
		request    string
		wantPinned bool
	}{
		{"pinnable, catalog granted", pinnerHost{sh}, granted, true},
		{"pinnable, catalog not granted", pinnerHost{sh}, notGranted, false},
		{"not pinnable", sh, granted, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			Handle(context.Background(), g, tc.host, []byte(tc.request))
			pr, ok := got.(pinnedRun)
			require.Equal(t, tc.wantPinned, ok)
			if ok {
				assert.Equal(t, runPins{catalog: true, generation: 42}, pr.pins())
			}
		})
	}
}
