package host_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/datasource/sqlsource"
	"github.com/gatehost/gatehost/internal/testing/guestcalls"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/tau2sql"
	"github.com/gatehost/gatehost/plugins/preconditions"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// BenchmarkPreconditionsRetailReturn checks one return against the
// 1,000-order retail database with the rules that have an SQL form
// (retailSQLCatalog): two preconditions (order_is_delivered and
// refund_to_original_or_gift_card), so two query.rows calls. native runs the
// gate's Go code through the SDK's JSON path with the host's query
// capability in-process; wasm runs it through the host, sandboxed, deadline
// enforced, no event log. The -sqlite variants read the same data from
// SQLite.
func BenchmarkPreconditionsRetailReturn(b *testing.B) {
	ctx := context.Background()
	cat := hosttest.RetailSQLCatalog(b)
	dbPath := filepath.Join(b.TempDir(), "retail.db")
	if err := tau2sql.BuildRetail(ctx, filepath.Join(repoRoot, "testdata/domains/retail/db.json"), dbPath); err != nil {
		b.Fatal(err)
	}
	sqlSrc, err := sqlsource.OpenSQLite(ctx, dbPath)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sqlSrc.Close() })
	domains := map[string]host.Domain{
		"retail":     {Catalog: cat, Source: hosttest.Docs(hosttest.RetailCollections(b))},
		"retail_sql": {Catalog: cat, Source: sqlSrc},
	}
	// A delivered order, refunded to its original method: admitted.
	subj := hosttest.ToolCall(b, "return_delivered_order_items", map[string]any{
		"order_id": "#W7678072", "item_ids": []string{"2323972008"}, "payment_method_id": "paypal_5727330"})
	for _, dom := range []string{"retail", "retail_sql"} {
		suffix := map[string]string{"retail": "", "retail_sql": "-sqlite"}[dom]
		b.Run("native"+suffix, func(b *testing.B) {
			nh := host.NewNativeQueryHost(domains)
			req := abi.Request{SubjectKind: abi.SubjectToolCall, Subject: subj, Config: json.RawMessage(`{"domain":"` + dom + `"}`),
				Context: abi.Context{Now: time.Now().UTC().Format(time.RFC3339Nano)}}
			inst := gatetest.NewInstance(preconditions.Gate, nh)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := inst.Evaluate(ctx, req)
				if err != nil || resp.Verdict == abi.Inconclusive {
					b.Fatal(err, resp)
				}
			}
		})
		cfg := host.Config{
			Plugins:   map[string]host.PluginConfig{"preconditions": {Path: hosttest.PreconditionsWasm(b)}},
			Pipelines: hosttest.PCPipelines("retail", "retail_sql"),
			Domains:   domains,
			PoolSize:  1,
		}
		check := func(b *testing.B, h *host.Host) {
			d, err := h.Check(ctx, dom+"-exec", subj, host.RunOptions{})
			if err != nil || d.Verdict == abi.Inconclusive {
				b.Fatal(err, d.Stages[0].Reason, d.Stages[0].Evidence)
			}
		}
		for _, v := range deadlineVariants {
			b.Run("wasm"+suffix+v.suffix, func(b *testing.B) {
				h := hosttest.New(b, v.cfg(cfg))
				b.ReportAllocs()
				for b.Loop() {
					check(b, h)
				}
			})
		}
		// The guest's function calls per run (guestcalls): a count the
		// same on every machine and under any load.
		b.Run("wasm"+suffix+"-calls", func(b *testing.B) {
			c := guestcalls.New()
			h := hosttest.NewCounted(b, c, cfg)
			c.Measure(b, func() { check(b, h) })
		})
	}
}

// BenchmarkPreconditionsForEach5 checks one return of five items against
// the 1,000-order retail database with the full retail catalog: items_in_order
// iterates over the five item_ids (five query.rows of order_lines, each
// counting the item in the request and in the order), beside
// order_is_delivered, payment_method_in_profile and
// refund_to_original_or_gift_card: eight query.rows in all. native and wasm
// as in BenchmarkPreconditionsRetailReturn.
func BenchmarkPreconditionsForEach5(b *testing.B) {
	ctx := context.Background()
	domains := map[string]host.Domain{
		"retail": {Catalog: hosttest.LoadCatalog(b, "testdata/domains/retail/domain.yaml"), Source: hosttest.Docs(hosttest.RetailCollections(b))},
	}
	// A delivered order of five lines, every line returned, refunded to the
	// original method: admitted.
	subj := hosttest.ToolCall(b, "return_delivered_order_items", map[string]any{
		"order_id": "#W1483350", "item_ids": []string{"9570044148", "4983901480", "4326528037", "6697922351", "9320099340"},
		"payment_method_id": "paypal_2319812"})
	req := abi.Request{SubjectKind: abi.SubjectToolCall, Subject: subj, Config: json.RawMessage(`{"domain":"retail"}`),
		Context: abi.Context{Now: time.Now().UTC().Format(time.RFC3339Nano)}}
	b.Run("native", func(b *testing.B) {
		inst := gatetest.NewInstance(preconditions.Gate, host.NewNativeQueryHost(domains))
		b.ReportAllocs()
		for b.Loop() {
			resp, err := inst.Evaluate(ctx, req)
			if err != nil || resp.Verdict != abi.Accepted {
				b.Fatal(err, resp)
			}
		}
	})
	b.Run("wasm", func(b *testing.B) {
		h := hosttest.New(b, host.Config{
			Plugins:   map[string]host.PluginConfig{"preconditions": {Path: hosttest.PreconditionsWasm(b)}},
			Pipelines: hosttest.PCPipelines("retail"),
			Domains:   domains,
			PoolSize:  1,
		})
		b.ReportAllocs()
		for b.Loop() {
			d, err := h.Check(ctx, "retail-exec", subj, host.RunOptions{})
			if err != nil || d.Verdict != abi.Accepted {
				b.Fatal(err, d.Stages[0].Reason, d.Stages[0].Evidence)
			}
		}
	})
}
