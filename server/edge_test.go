package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/edgecase"
)

// TestServeRejectsUndecodable: the HTTP API is bound by the same rule as
// gatehost check, for tool calls and proposals in every format.
func TestServeRejectsUndecodable(t *testing.T) {
	cfg, _ := edgecase.WriteConfig(t)
	ts := startServe(t, cfg, nil)
	for name, in := range edgecase.Undecodable {
		for _, p := range []string{"exec", "call-accept-all", "plan-accept-all"} {
			if name == "native" && p == "plan-accept-all" {
				continue
			}
			a := ts.do(t, "POST", "/v1/pipelines/"+p+"/check?session=s", []byte(in))
			require.Equal(t, 200, a.status, "%s on %s: %s", name, p, a.body)
			d := a.decision(t)
			assert.Equal(t, abi.Rejected, d.Verdict, "%s on %s", name, p)
			require.NotEmpty(t, d.Findings)
			last := d.Findings[len(d.Findings)-1]
			assert.Equal(t, host.CodeUndecodableArguments, last.Code, "%s on %s", name, p)
			assert.Equal(t, host.HostStage, last.Stage)
		}
	}
}

// TestServeRefusesNonIJSON: the HTTP API answers 400 invalid_subject with
// the JSON Pointer in field.
func TestServeRefusesNonIJSON(t *testing.T) {
	cfg, _ := edgecase.WriteConfig(t)
	ts := startServe(t, cfg, nil)
	for _, c := range edgecase.NonIJSON {
		a := ts.do(t, "POST", "/v1/pipelines/"+c.Pipeline+"/check", []byte(c.Body))
		require.Equal(t, 400, a.status, "%s: %s", c.Name, a.body)
		e := a.apiErr(t)
		assert.Equal(t, errInvalidSubject, e.Error.Code, c.Name)
		assert.Equal(t, c.Field, e.Error.Field, c.Name)
		assert.Contains(t, e.Error.Message, "not I-JSON", c.Name)
	}
}

// TestGateNumbersExactInAnswer: numbers a gate wrote in its evidence and
// finding details come out of the HTTP API digit for digit.
func TestGateNumbersExactInAnswer(t *testing.T) {
	cfg, _ := edgecase.WriteConfig(t)
	ts := startServe(t, cfg, nil)
	a := ts.do(t, "POST", "/v1/pipelines/plan-accept-all/check", []byte(`{"actions":[]}`))
	require.Equal(t, 200, a.status, string(a.body))
	for _, n := range edgecase.GateNumbers {
		assert.Contains(t, string(a.body), n, "HTTP answer")
	}
}
