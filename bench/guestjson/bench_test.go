package guestjson_test

import (
	stdjson "encoding/json"
	"fmt"
	"testing"

	_ "embed"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
	goccy "github.com/goccy/go-json"
	segment "github.com/segmentio/encoding/json"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fastjson"
)

// The inputs of one real static-verify gate call (see TestFixtures).
var (
	//go:embed testdata/request.json
	requestJSON []byte
	//go:embed testdata/answers.json
	answersJSON []byte
	//go:embed testdata/answers-warm.json
	answersWarmJSON []byte
	//go:embed testdata/response.json
	responseJSON []byte
)

// codec is one candidate for the SDK's JSON: how it decodes and encodes.
type codec struct {
	name      string
	unmarshal func([]byte, any) error
	marshal   func(any) ([]byte, error)
}

var codecs = []codec{
	{"encoding-json", stdjson.Unmarshal, stdjson.Marshal},
	{"segmentio", segment.Unmarshal, segment.Marshal},
	{"goccy", goccy.Unmarshal, goccy.Marshal},
}

// answerEnvelope is how sdk.Call decodes a host answer.
type answerEnvelope struct {
	Result *abi.CatalogGetAnswer `json:"result"`
	Error  *abi.CallError        `json:"error"`
}

func decodeRequest(c codec) (abi.Request, abi.Proposal, error) {
	var req abi.Request
	if err := c.unmarshal(requestJSON, &req); err != nil {
		return req, abi.Proposal{}, err
	}
	var p abi.Proposal
	err := c.unmarshal(req.Subject, &p)
	return req, p, err
}

func answers(tb testing.TB, list []byte) [][]byte {
	var raw []stdjson.RawMessage
	require.NoError(tb, stdjson.Unmarshal(list, &raw))
	out := make([][]byte, len(raw))
	for i, a := range raw {
		out[i] = a
	}
	return out
}

func decodeAnswers(c codec, in [][]byte) ([]answerEnvelope, error) {
	out := make([]answerEnvelope, len(in))
	for i, a := range in {
		if err := c.unmarshal(a, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeAnswersGuestJSON decodes as sdk.Call does for catalog.get.
func decodeAnswersGuestJSON(in [][]byte) ([]answerEnvelope, error) {
	out := make([]answerEnvelope, len(in))
	for i, a := range in {
		var env guestjson.Envelope[abi.CatalogGetAnswer]
		if _, err := guestjson.DecodeEnvelope(a, &env); err != nil {
			return nil, err
		}
		out[i] = answerEnvelope(env)
	}
	return out, nil
}

func response(tb testing.TB) abi.Response {
	var r abi.Response
	require.NoError(tb, stdjson.Unmarshal(responseJSON, &r))
	return r
}

// TestCandidatesAgree: on the real inputs every candidate decodes what
// encoding/json decodes and encodes the same bytes; a candidate that does
// not is no candidate, however fast.
func TestCandidatesAgree(t *testing.T) {
	std := codecs[0]
	wantReq, wantProp, err := decodeRequest(std)
	require.NoError(t, err)
	wantAns, err := decodeAnswers(std, answers(t, answersJSON))
	require.NoError(t, err)
	wantWarm, err := decodeAnswers(std, answers(t, answersWarmJSON))
	require.NoError(t, err)
	wantResp, err := std.marshal(response(t))
	require.NoError(t, err)
	t.Run("guestjson", func(t *testing.T) {
		var req abi.Request
		var prop abi.Proposal
		require.NoError(t, guestjson.DecodeRequest(requestJSON, &req))
		require.NoError(t, guestjson.DecodeProposal(req.Subject, &prop))
		require.Equal(t, wantReq, req)
		require.Equal(t, wantProp, prop)
		ans, err := decodeAnswersGuestJSON(answers(t, answersJSON))
		require.NoError(t, err)
		require.Equal(t, wantAns, ans)
		ans, err = decodeAnswersGuestJSON(answers(t, answersWarmJSON))
		require.NoError(t, err)
		require.Equal(t, wantWarm, ans)
	})
	for _, c := range codecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			req, prop, err := decodeRequest(c)
			require.NoError(t, err)
			require.Equal(t, wantReq, req)
			require.Equal(t, wantProp, prop)
			ans, err := decodeAnswers(c, answers(t, answersJSON))
			require.NoError(t, err)
			require.Equal(t, wantAns, ans)
			ans, err = decodeAnswers(c, answers(t, answersWarmJSON))
			require.NoError(t, err)
			require.Equal(t, wantWarm, ans)
			resp, err := c.marshal(response(t))
			require.NoError(t, err)
			require.Equal(t, string(wantResp), string(resp))
		})
	}
}

// The benchmarks: the SDK's share of one static-verify gate call, per
// candidate. Run them in the guest (scripts/guestjson-bench.sh): the
// figures that matter are wasm's, deadline check on.

func BenchmarkDecodeRequest(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := decodeRequest(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The SDK's decoder (internal/guestjson), as sdk.Handle and
	// Request.Proposal use it.
	b.Run("guestjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req abi.Request
			var p abi.Proposal
			if err := guestjson.DecodeRequest(requestJSON, &req); err != nil {
				b.Fatal(err)
			}
			if err := guestjson.DecodeProposal(req.Subject, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A lower bound for any decoder that must check the input is JSON:
	// fastjson's parse of request and subject into its own tree, with no
	// mapping onto the ABI's types.
	b.Run("fastjson-parse-only", func(b *testing.B) {
		var p fastjson.Parser
		b.ReportAllocs()
		for b.Loop() {
			v, err := p.ParseBytes(requestJSON)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.ParseBytes(v.Get("subject").MarshalTo(nil)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeAnswers decodes the catalog.get answers of a first run
// (cold: every schema) and of a warm instance (known schemas left out).
func BenchmarkDecodeAnswers(b *testing.B) {
	for _, run := range []struct {
		name string
		list []byte
	}{{"cold", answersJSON}, {"warm", answersWarmJSON}} {
		in := answers(b, run.list)
		for _, c := range codecs {
			b.Run(run.name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := decodeAnswers(c, in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(run.name+"/guestjson", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeAnswersGuestJSON(in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(run.name+"/fastjson-parse-only", func(b *testing.B) {
			var p fastjson.Parser
			b.ReportAllocs()
			for b.Loop() {
				for _, a := range in {
					if _, err := p.ParseBytes(a); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	r := response(b)
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.marshal(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func Example_sizes() {
	fmt.Println(len(requestJSON) > 0, len(answersJSON) > 0, len(responseJSON) > 0)
	// Output: true true true
}
