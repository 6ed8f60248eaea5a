package fleettest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/store/postgres"
)

const (
	agentToken    = "fleet-agent-token-0123456789abcdef"
	approverToken = "fleet-approver-token-0123456789abcdef"
	// tool is granted and revoked by the load; call is a call of it.
	tool = "mcp.github:create_pull_request"
	call = `{"id":"c-1","tool":"mcp.github:create_pull_request","parameters":{"owner":"octo-org","repo":"widgets","title":"t","head":"h","base":"main"}}`
	// replicas, kill rounds and the round at which the database restarts.
	replicas   = 3
	killRounds = 20
	dbRound    = 10
	workers    = 6
)

func TestMain(m *testing.M) {
	testwasm.Main(m, nil)
}

// replica is one `gatehost serve` process of the fleet.
type replica struct {
	node string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// fleet is three replicas of one config and one database.
type fleet struct {
	t      *testing.T
	bin    string
	config string
	dsn    string
	dir    string
	mu     sync.Mutex
	reps   []*replica
	client *http.Client
}

func (f *fleet) start(i int) {
	f.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(f.t, err)
	addr := ln.Addr().String()
	ln.Close()
	r := &replica{node: fmt.Sprintf("node-%d", i), addr: addr, done: make(chan struct{}), log: &bytes.Buffer{}}
	r.cmd = exec.Command(f.bin, "serve", "--config", f.config, "--listen", addr,
		"--token-file", filepath.Join(f.dir, "agents"), "--approver-token-file", filepath.Join(f.dir, "approvers"),
		"--watch-interval", "0", "--shutdown-timeout", "5s")
	r.cmd.Env = append(os.Environ(), "GATEHOST_STORE_DSN="+f.dsn, "GATEHOST_STORE_NODE_ID="+r.node)
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, &syncWriter{b: r.log}
	require.NoError(f.t, r.cmd.Start())
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	// Bounded: a replica that never gets ready fails the test.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := f.client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-r.done:
			f.t.Fatalf("replica %s exited while starting:\n%s", r.node, r.log)
		default:
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("replica %s not ready after 2m:\n%s", r.node, r.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.mu.Lock()
	f.reps[i] = r
	f.mu.Unlock()
}

// kill sends SIGKILL to replica i and waits for it to exit.
func (f *fleet) kill(i int) {
	f.mu.Lock()
	r := f.reps[i]
	f.mu.Unlock()
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

func (f *fleet) addr(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reps[i].addr
}

type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// decision is what a check answers, or the decision an error carries.
type decision struct {
	RunID   string `json:"run_id"`
	Verdict string `json:"verdict"`
}

// check sends the call for session to replica i. ok is false when no
// decision was acknowledged (a transport error, or an error answer).
func (f *fleet) check(i int, session string) (d decision, status int, err error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+f.addr(i)+"/v1/pipelines/exec/check?session="+session, strings.NewReader(call))
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return d, 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode == http.StatusOK {
		err = json.Unmarshal(b, &d)
	} else {
		var e struct {
			Decision *decision `json:"decision"`
		}
		if json.Unmarshal(b, &e) == nil && e.Decision != nil {
			d = *e.Decision
		}
	}
	return d, resp.StatusCode, err
}

// session changes a grant on replica i: op is activate or revoke.
func (f *fleet) session(i int, op, session string) (int, error) {
	body := fmt.Sprintf(`{"tools":[%q]}`, tool)
	req, _ := http.NewRequest(http.MethodPost, "http://"+f.addr(i)+"/v1/sessions/"+session+"/"+op, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+approverToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// ledger is what the load saw.
type ledger struct {
	mu         sync.Mutex
	acked      map[string]string // run_id -> verdict, for every 200 answer
	violations []string
	accepted   atomic.Int64
	revoked    atomic.Int64
	rounds     atomic.Int64 // completed worker iterations
}

func (l *ledger) ack(d decision) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[d.RunID] = d.Verdict
}

func (l *ledger) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

// work is one worker's load until stop: grant the tool to a new session on
// one replica, call it on another, revoke it on a third, and then call it
// on every replica — after a revocation returned, no replica may accept.
func (f *fleet) work(w int, stop <-chan struct{}, l *ledger) {
	rng := rand.New(rand.NewPCG(uint64(w), 17))
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		sess := fmt.Sprintf("w%d-%d", w, k)
		a := rng.IntN(replicas)
		if code, err := f.session(a, "activate", sess); err != nil || code != http.StatusOK {
			time.Sleep(20 * time.Millisecond) // a replica down or the database out
			continue
		}
		b := (a + 1 + rng.IntN(replicas-1)) % replicas
		d, code, err := f.check(b, sess)
		if err == nil && code == http.StatusOK {
			l.ack(d)
			switch d.Verdict {
			case "accepted":
				l.accepted.Add(1)
			case "rejected":
				l.violate("session %s: granted on %d but rejected on %d (run %s)", sess, a, b, d.RunID)
			}
		}
		// Revoke until a replica confirms it, or give the session up.
		revoked := false
		for try := 0; try < 2*replicas && !revoked; try++ {
			code, err := f.session((a+try)%replicas, "revoke", sess)
			revoked = err == nil && code == http.StatusOK
			if !revoked {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if !revoked {
			continue
		}
		l.revoked.Add(1)
		for i := range replicas {
			d, code, err := f.check(i, sess)
			if err != nil {
				continue
			}
			if code == http.StatusOK {
				l.ack(d)
			}
			if d.Verdict == "accepted" {
				l.violate("session %s: accepted on replica %d after its revocation returned (run %s, HTTP %d)", sess, i, d.RunID, code)
			}
		}
		l.rounds.Add(1)
	}
}

// waitProgress waits until the workers completed n more iterations: so
// each kill lands in the middle of load. Bounded.
func waitProgress(t *testing.T, l *ledger, n int64) {
	t.Helper()
	start := l.rounds.Load()
	deadline := time.Now().Add(2 * time.Minute)
	for l.rounds.Load() < start+n {
		if time.Now().After(deadline) {
			t.Fatalf("no progress: %d iterations in 2m", l.rounds.Load()-start)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFleet runs three replicas on one PostgreSQL under a mixed load of
// grants, calls and revocations sent to different replicas; kills a
// replica with SIGKILL mid-load in each of 20 rounds and restarts it;
// restarts the database once. Then: no acknowledged decision is missing
// from the log, every chain verifies, no call was accepted after its
// revocation returned, and during the outage every decision was
// inconclusive.
// startFleet starts n replicas of one config on a new database of a
// fresh cluster: the GitHub catalog, an exec pipeline whose stage config
// is execConfig, store operations bounded by opTimeout. The replicas are
// killed at the end of the test.
func startFleet(t *testing.T, n int, opTimeout, execConfig string) (*fleet, *pgtest.Cluster) {
	t.Helper()
	cluster := pgtest.Start(t)
	dsn := cluster.NewDatabase(t)
	bin, err := testwasm.Binary("cmd/gatehost")
	require.NoError(t, err)
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	root, err := testwasm.Root()
	require.NoError(t, err)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "agents"), []byte(agentToken+" name=agent sessions=*\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "approvers"), []byte(approverToken+" name=operator\n"), 0o600))
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - {format: mcp, path: %s, server: github}
store:
  kind: postgres
  chain: node
  op_timeout: %s
cache_dir: %s
plugins:
  exec: {path: %s}
pipelines:
  exec:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 60s
        capabilities: [catalog, session]
        config: %s
`, filepath.Join(root, "testdata/catalogs/github-mcp-server"), opTimeout, testwasm.CacheDir(), execWasm, execConfig)
	config := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(config, []byte(cfg), 0o644))

	f := &fleet{t: t, bin: bin, config: config, dsn: dsn, dir: dir, reps: make([]*replica, n),
		client: &http.Client{Timeout: 30 * time.Second}}
	for i := range n {
		f.start(i)
	}
	t.Cleanup(func() {
		for _, r := range f.reps {
			if r != nil {
				_ = r.cmd.Process.Signal(syscall.SIGKILL)
				<-r.done
			}
		}
	})
	return f, cluster
}

func TestFleet(t *testing.T) {
	f, cluster := startFleet(t, replicas, "2s", "{confirm_effects: []}")

	l := &ledger{acked: map[string]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); f.work(w, stop, l) }()
	}
	var outage []string
	for round := range killRounds {
		waitProgress(t, l, 3)
		if round == dbRound {
			outage = f.databaseOutage(t, cluster)
			waitProgress(t, l, 3)
		}
		victim := round % replicas
		f.kill(victim)
		f.start(victim)
	}
	waitProgress(t, l, 3)
	close(stop)
	wg.Wait()
	for i := range replicas {
		_ = f.reps[i].cmd.Process.Signal(syscall.SIGTERM)
		<-f.reps[i].done
	}

	assert.Empty(t, l.violations)
	assert.Empty(t, outage, "during the outage every decision is inconclusive")
	require.Positive(t, l.accepted.Load(), "the load made decisions")
	require.Positive(t, l.revoked.Load(), "the load revoked grants")

	// The log: every chain verifies, and holds every acknowledged decision.
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Options{DSN: f.dsn, NodeID: "verifier"})
	require.NoError(t, err)
	defer db.Close()
	reports, err := db.VerifyChains(ctx, postgres.VerifyChainsOptions{})
	require.NoError(t, err)
	require.Len(t, reports, replicas, "one chain per replica")
	for _, r := range reports {
		assert.NoError(t, r.Err, "chain %s", r.Chain)
	}
	logged := map[string]string{}
	for _, r := range reports {
		var buf bytes.Buffer
		_, err := db.ExportChain(ctx, r.Chain, &buf)
		require.NoError(t, err)
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var rec struct {
				Kind    string `json:"kind"`
				RunID   string `json:"run_id"`
				Verdict string `json:"verdict"`
			}
			require.NoError(t, json.Unmarshal(line, &rec))
			if rec.Kind == "decision" {
				logged[rec.RunID] = rec.Verdict
			}
		}
	}
	missing := 0
	for id, verdict := range l.acked {
		if got, ok := logged[id]; !ok || got != verdict {
			missing++
			t.Errorf("acknowledged decision %s (%s) not in the log (found %q)", id, verdict, got)
		}
	}
	t.Logf("fleet: %d acknowledged decisions (%d accepted), %d revocations, %d kill rounds, all %d in the log, %d chains verified, %d missing",
		len(l.acked), l.accepted.Load(), l.revoked.Load(), killRounds, len(l.acked), len(reports), missing)
}

// databaseOutage stops the database mid-load, checks that every replica
// decides inconclusive while it is down, restarts it and waits until
// every replica is ready and accepts again. It returns what broke the
// rule.
func (f *fleet) databaseOutage(t *testing.T, cluster *pgtest.Cluster) []string {
	t.Helper()
	require.NoError(t, cluster.Stop())
	var bad []string
	for i := range replicas {
		for n := range 3 {
			d, code, err := f.check(i, fmt.Sprintf("outage-%d-%d", i, n))
			if err != nil {
				bad = append(bad, fmt.Sprintf("replica %d: %v", i, err))
				continue
			}
			if code == http.StatusOK || d.Verdict != "inconclusive" {
				bad = append(bad, fmt.Sprintf("replica %d: HTTP %d, verdict %q during the outage", i, code, d.Verdict))
			}
		}
	}
	// The replicas report the outage.
	for i := range replicas {
		resp, err := f.client.Get("http://" + f.addr(i) + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				bad = append(bad, fmt.Sprintf("replica %d: /readyz %d during the outage", i, resp.StatusCode))
			}
		}
	}
	require.NoError(t, cluster.Start())
	// Service resumes: each replica grants and accepts again (bounded).
	for i := range replicas {
		sess := fmt.Sprintf("resume-%d", i)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			code, err := f.session(i, "activate", sess)
			if err == nil && code == http.StatusOK {
				if d, code, err := f.check(i, sess); err == nil && code == http.StatusOK && d.Verdict == "accepted" {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d did not resume after the database restarted", i)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return bad
}
