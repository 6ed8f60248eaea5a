//go:build !wasip1

package guestjson_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	staticverify "github.com/gatehost/gatehost/plugins/static-verify"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the fixtures under testdata/")

// recorder keeps every answer envelope the gate receives, in order.
type recorder struct {
	sdk.Host
	ec      sdk.EnvelopeCaller
	answers []json.RawMessage
}

func (r *recorder) CallEnvelope(op string, req []byte) ([]byte, error) {
	a, err := r.ec.CallEnvelope(op, req)
	if err == nil {
		r.answers = append(r.answers, append(json.RawMessage(nil), a...))
	}
	return a, err
}

// TestFixtures derives the benchmark inputs from the real run the host
// benchmarks make (BenchmarkStaticVerify10Actions): the request the host
// sends for testdata/static-verify/bench-10-actions.json, the catalog.get
// answers static-verify receives against the 117-tool GitHub catalog, and
// its response. With -update it rewrites them; without, it fails when they
// are stale.
func TestFixtures(t *testing.T) {
	root := filepath.Join("..", "..")
	subj, err := os.ReadFile(filepath.Join(root, "testdata/static-verify/bench-10-actions.json"))
	require.NoError(t, err)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, subj))
	tools, err := catalog.Load(filepath.Join(root, "testdata/catalogs/github-mcp-server"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "github"})
	require.NoError(t, err)
	var abiTools []abi.Tool
	for _, tl := range tools {
		abiTools = append(abiTools, tl.ABI())
	}
	req := abi.Request{
		ABIVersion: abi.MajorVersion, MinorVersion: abi.MinorVersion,
		RunID: "01JBENCHRUN0000000000000000", Pipeline: "p", Stage: "sv",
		SubjectKind: abi.SubjectProposal, Subject: compact.Bytes(),
		Context: abi.Context{CatalogGeneration: 1, Now: "2026-01-01T00:00:00.123456789Z", Capabilities: []string{abi.CapabilityCatalog}},
	}
	reqJSON, err := json.Marshal(req)
	require.NoError(t, err)
	gh := gatetest.SinglePass(gatetest.NewHost(abiTools...))
	// Two runs, as a pooled instance serves them: the first receives
	// every tool's schema, the second (warm) only what it does not hold.
	var answers [2][]byte
	var respJSON []byte
	for i := range answers {
		rec := &recorder{Host: gh, ec: gh.(sdk.EnvelopeCaller)}
		respJSON = sdk.Handle(context.Background(), &staticverify.Gate, rec, reqJSON)
		var resp abi.Response
		require.NoError(t, json.Unmarshal(respJSON, &resp))
		require.Equal(t, abi.Accepted, resp.Verdict, "%s", respJSON)
		require.NotEmpty(t, rec.answers)
		answers[i], err = json.Marshal(rec.answers)
		require.NoError(t, err)
	}
	require.Less(t, len(answers[1]), len(answers[0]), "the warm run's answers leave the known schemas out")

	for name, b := range map[string][]byte{"request.json": reqJSON, "answers.json": answers[0], "answers-warm.json": answers[1], "response.json": respJSON} {
		p := filepath.Join("testdata", name)
		if *update {
			require.NoError(t, os.WriteFile(p, append(b, '\n'), 0o644))
			continue
		}
		old, err := os.ReadFile(p)
		require.NoError(t, err, "run go test -run TestFixtures -update")
		require.Equal(t, string(b), string(bytes.TrimSuffix(old, []byte("\n"))), "%s is stale: go test -run TestFixtures -update", name)
	}
}
