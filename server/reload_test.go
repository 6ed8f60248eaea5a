package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
)

// variant is config A (catalog a, stage sv-a) or B (catalog b, stage sv-b).
func variantParams(b bool) serveParams {
	if b {
		return serveParams{catalog: "b", stageName: "sv-b"}
	}
	return serveParams{catalog: "a", stageName: "sv-a"}
}

// TestServeReloadUnderLoad reloads 100 times (20 under -race), alternating
// configs A and B, while 4 clients (2) check without pause. Every request must succeed, and
// every decision must be wholly of one config: the catalog generation it
// reports must be the snapshot it ran on (A's catalog accepts the proposal,
// B's rejects it) and its stage must come from the same config.
func TestServeReloadUnderLoad(t *testing.T) {
	reloads, clients := 100, 4
	if raceEnabled {
		// Under the race detector a reload takes seconds (it builds a
		// wazero runtime); 100 of them do not fit a package's test time.
		// go test -run TestServeReloadUnderLoad runs all 100.
		reloads, clients = 20, 2
	}
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, variantParams(false))
	ts := startServe(t, cfg, nil)

	type result struct {
		status    int
		configGen uint64
		d         host.Decision
		err       error
	}
	var (
		mu      sync.Mutex
		results []result
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for !stop.Load() {
				resp, err := ts.client.Post(ts.url+"/v1/pipelines/admission/check", "application/json", strings.NewReader(string(readThenWrite)))
				r := result{err: err}
				if err == nil {
					r.status = resp.StatusCode
					r.configGen, _ = strconv.ParseUint(resp.Header.Get(headerConfigGen), 10, 64)
					r.err = json.NewDecoder(resp.Body).Decode(&r.d)
					resp.Body.Close()
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for i := 1; i <= reloads; i++ {
		writeServeConfig(t, dir, variantParams(i%2 == 1))
		if i%10 == 0 { // every tenth through the SIGHUP path
			ts.hup <- syscall.SIGHUP
			require.Eventually(t, func() bool { return ts.s.cur.Load().generation == uint64(i+1) }, time.Minute, time.Millisecond)
			continue
		}
		require.NoError(t, ts.s.reload(context.Background(), "test"))
	}
	took := time.Since(start)
	stop.Store(true)
	wg.Wait()
	require.NoError(t, ts.stop(t))

	byGen := map[uint64]int{}
	for _, r := range results {
		require.NoError(t, r.err)
		require.Equal(t, http.StatusOK, r.status)
		g := r.d.CatalogGeneration
		byGen[g]++
		isB := g%2 == 1 // reload i installs B for odd i, and the catalog generation is i
		want, stage := abi.Accepted, "sv-a"
		if isB {
			want, stage = abi.Rejected, "sv-b"
		}
		require.Equal(t, want, r.d.Verdict, "catalog generation %d", g)
		require.Len(t, r.d.Stages, 1)
		require.Equal(t, stage, r.d.Stages[0].Name, "catalog generation %d with the other config's pipeline", g)
		require.Equal(t, g+1, r.configGen, "each reload changes the catalog, so its generation is the config's minus one")
		require.Equal(t, g, uint64(r.d.Stages[0].Evidence["catalog_generation"].(float64)), "the gate saw the same snapshot")
	}
	t.Logf("%d reloads in %v (%.0f ms each) under %d clients: %d decisions, 0 failed, over %d catalog generations",
		reloads, took.Round(time.Millisecond), float64(took.Milliseconds())/float64(reloads), clients, len(results), len(byGen))
	assert.Greater(t, len(byGen), reloads/4, "load overlapped the reloads")
	assert.Equal(t, uint64(reloads), ts.s.cur.Load().h.Catalog().Snapshot().Generation())

	n, _ := decisionRecords(t, filepath.Join(dir, "events.jsonl"))
	assert.Equal(t, len(results), n, "one decision record per decision")
}

// TestServeBadReloadKeepsServing: a config that fails to load or validate
// leaves the previous one serving, is logged with its cause and counted.
func TestServeBadReloadKeepsServing(t *testing.T) {
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, variantParams(false))
	good, err := os.ReadFile(cfg)
	require.NoError(t, err)
	ts := startServe(t, cfg, nil)
	bad := []struct {
		name, content, why string
	}{
		{"unknown key", string(good) + "bogus_key: 1\n", `unknown key "bogus_key"`},
		{"malformed YAML", string(good) + "pipelines: [\n", "config"},
		{"missing plugin file", strings.Replace(string(good), svWasm, filepath.Join(dir, "absent.wasm"), 1), "plugins.static-verify.path"},
		{"stage config rejected by the gate's schema", strings.Replace(string(good), "max_actions: 100", `max_actions: "many"`, 1), "pipelines.admission.stages[0].config.max_actions"},
		{"event log moved", strings.Replace(string(good), "path: events.jsonl", "path: other.jsonl", 1), "event_log.path"},
		{"no pipeline stage", strings.Replace(string(good), "plugin: static-verify", "plugin: nope", 1), "no plugin named"},
	}
	for i, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			writeAtomic(t, cfg, c.content)
			err := ts.s.reload(context.Background(), "test")
			require.ErrorContains(t, err, c.why)
			a := ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite)
			require.Equal(t, 200, a.status)
			d := a.decision(t)
			assert.Equal(t, abi.Accepted, d.Verdict)
			assert.Equal(t, "sv-a", d.Stages[0].Name, "the old config serves")
			assert.Equal(t, "1", a.header.Get(headerConfigGen))
			m := string(ts.do(t, "GET", "/metrics", nil).body)
			assert.Contains(t, m, `gatehost_config_reloads_total{result="failure"} `+strconv.Itoa(i+1))
			assert.Contains(t, m, "gatehost_ready 1")
		})
	}
	logs := ts.logs.String()
	assert.Contains(t, logs, "reload failed; the previous config keeps serving")
	assert.Contains(t, logs, `unknown key \"bogus_key\"`)

	writeAtomic(t, cfg, string(good))
	require.NoError(t, ts.s.reload(context.Background(), "test"), "a fixed config reloads")
	assert.Equal(t, uint64(2), ts.s.cur.Load().generation)
	assert.Equal(t, uint64(0), ts.s.cur.Load().h.Catalog().Snapshot().Generation(), "an unchanged catalog keeps its generation")
}

// TestServeWatchesConfigFile: a changed file reloads; a bad file is tried
// once, not on every poll; fixing it reloads.
func TestServeWatchesConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, variantParams(false))
	ts := startServe(t, cfg, func(o *Options) { o.WatchInterval = 20 * time.Millisecond })
	failures := func() string {
		m := string(ts.do(t, "GET", "/metrics", nil).body)
		for _, line := range strings.Split(m, "\n") {
			if strings.HasPrefix(line, `gatehost_config_reloads_total{result="failure"}`) {
				return strings.Fields(line)[1]
			}
		}
		return ""
	}
	good, err := os.ReadFile(cfg)
	require.NoError(t, err)
	writeAtomic(t, cfg, string(good)+"bogus_key: 1\n")
	require.Eventually(t, func() bool { return failures() == "1" }, 30*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, "1", failures(), "an unchanged bad file is not retried on every poll")

	writeServeConfig(t, dir, variantParams(true))
	require.Eventually(t, func() bool {
		a := ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite)
		return a.status == 200 && a.decision(t).Stages[0].Name == "sv-b"
	}, 30*time.Second, 10*time.Millisecond)
	d := ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite).decision(t)
	assert.Equal(t, abi.Rejected, d.Verdict)
	assert.Equal(t, uint64(1), d.CatalogGeneration, "a changed catalog advances the generation by one")
}

// TestServeShutdown: shutdown stops accepting, lets the run in flight
// finish and answer, records it, and releases the event log.
func TestServeShutdown(t *testing.T) {
	dir := t.TempDir()
	p := variantParams(false)
	p.slow = "1500ms"
	ts := startServe(t, writeServeConfig(t, dir, p), nil)

	got := make(chan answer, 1)
	go func() { got <- ts.do(t, "POST", "/v1/pipelines/slow/check", readThenWrite) }()
	require.Eventually(t, func() bool {
		running, _ := ts.s.cur.Load().h.Runs()
		return running == 1
	}, 30*time.Second, time.Millisecond)
	ts.cancel()
	require.Eventually(t, func() bool { return dialRefused(ts.url) }, 10*time.Second, time.Millisecond, "stops accepting")
	a := <-got
	require.Equal(t, 200, a.status, "the run in flight finishes and answers")
	d := a.decision(t)
	assert.Equal(t, abi.ReasonPluginTimeout, d.Stages[0].Reason)
	require.NoError(t, ts.stop(t))

	l, err := eventlog.Open(filepath.Join(dir, "events.jsonl"), eventlog.Options{})
	require.NoError(t, err, "the log is closed, its lock released, its chain whole")
	require.NoError(t, l.Close())
	n, byReq := decisionRecords(t, filepath.Join(dir, "events.jsonl"))
	assert.Equal(t, 1, n)
	assert.Contains(t, byReq, a.header.Get(headerRequestID))
	assert.Contains(t, ts.logs.String(), "stopped; event log closed")
}

// TestServeShutdownDeadline: runs still going at the deadline are
// cancelled; each ends inconclusive and is recorded, and shutdown returns.
func TestServeShutdownDeadline(t *testing.T) {
	dir := t.TempDir()
	p := variantParams(false)
	p.slow = "60s"
	ts := startServe(t, writeServeConfig(t, dir, p), func(o *Options) { o.ShutdownTimeout = 200 * time.Millisecond })
	go func() {
		req, _ := http.NewRequest("POST", ts.url+"/v1/pipelines/slow/check", strings.NewReader(string(readThenWrite)))
		req.Header.Set(headerRequestID, "cut-short")
		if resp, err := ts.client.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool {
		running, _ := ts.s.cur.Load().h.Runs()
		return running == 1
	}, 30*time.Second, time.Millisecond)
	start := time.Now()
	err := ts.stop(t)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	n, byReq := decisionRecords(t, filepath.Join(dir, "events.jsonl"))
	require.Equal(t, 1, n)
	assert.Equal(t, string(abi.Inconclusive), byReq["cut-short"].Verdict)
}

var _ = errors.New
