package frontend_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
)

func TestListenLoopbackRule(t *testing.T) {
	for _, tc := range []struct {
		name             string
		addr             string
		authed, insecure bool
		wantErr          string
	}{
		{name: "loopback without auth", addr: "127.0.0.1:0"},
		{name: "any address without auth", addr: ":0", wantErr: "not a loopback address"},
		{name: "0.0.0.0 without auth", addr: "0.0.0.0:0", wantErr: "--insecure-listen-any"},
		{name: "any address with auth", addr: ":0", authed: true},
		{name: "any address, insecure", addr: ":0", insecure: true},
		{name: "not an address", addr: "nope", wantErr: "--listen nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := frontend.Listen(tc.addr, tc.authed, tc.insecure)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				if strings.Contains(tc.wantErr, "loopback") || strings.Contains(tc.wantErr, "insecure") {
					assert.ErrorIs(t, err, frontend.ErrUsage)
				}
				return
			}
			require.NoError(t, err)
			assert.NoError(t, ln.Close())
		})
	}
}

func TestCheckTLS(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not pem"), 0o600))
	for _, tc := range []struct {
		name, cert, key string
		usage           bool
		wantErr         string
	}{
		{name: "plain HTTP"},
		{name: "cert without key", cert: junk, usage: true, wantErr: "--tls-cert and --tls-key go together"},
		{name: "key without cert", key: junk, usage: true, wantErr: "go together"},
		{name: "missing file", cert: filepath.Join(dir, "none"), key: junk, wantErr: "--tls-cert"},
		{name: "not a key pair", cert: junk, key: junk, wantErr: "tls:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := frontend.CheckTLS(tc.cert, tc.key)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			assert.Equal(t, tc.usage, errors.Is(err, frontend.ErrUsage))
		})
	}
}

func TestCheckTokenSwap(t *testing.T) {
	some, err := identity.LoadTokens("", "tok-A-0123456789abcdef0123456789")
	require.NoError(t, err)
	other, err := identity.LoadTokens("", "tok-B-fedcba9876543210fedcba9876")
	require.NoError(t, err)
	none := &identity.Tokens{}
	for _, tc := range []struct {
		name          string
		running, next *identity.Tokens
		ok            bool
	}{
		{"tokens to other tokens", some, other, true},
		{"none to none", none, nil, true},
		{"auth turned off", some, none, false},
		{"auth turned on", nil, some, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := frontend.CheckTokenSwap(tc.running, tc.next)
			assert.Equal(t, tc.ok, err == nil, "%v", err)
		})
	}
}

// TestReloader: a reload that fails keeps the running generation, is
// logged and counted; one that succeeds is the next generation; the file
// poll reloads only a changed file, and a failed file only once; after
// Stop nothing reloads.
func TestReloader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehost.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o600)) }
	write("good: 1\n")
	var logs bytes.Buffer
	m := frontend.NewMetrics()
	var applied []uint64
	r := &frontend.Reloader{Path: path, Name: "test", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: m,
		Apply: func(_ context.Context, gen uint64) ([]any, error) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			if strings.HasPrefix(string(b), "broken") {
				return nil, errors.New("broken config")
			}
			applied = append(applied, gen)
			return []any{"extra", "x"}, nil
		}}
	ctx := context.Background()
	require.ErrorContains(t, r.Reload(ctx, "early"), "not ready")
	r.Mark()
	r.Started()
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		b, _ := io.ReadAll(rec.Body)
		return string(b)
	}
	steps := []struct {
		name    string
		file    string // "" leaves it
		do      func() error
		gen     uint64
		applied int
		metrics []string
	}{
		{name: "unchanged file: no reload", do: func() error { r.IfChanged(ctx); return nil }, gen: 1, applied: 0,
			metrics: []string{"gatehost_config_generation 1", `gatehost_config_reloads_total{result="success"} 0`}},
		{name: "changed file: reloaded", file: "good: 2\n", do: func() error { r.IfChanged(ctx); return nil }, gen: 2, applied: 1,
			metrics: []string{"gatehost_config_generation 2", `gatehost_config_reloads_total{result="success"} 1`}},
		{name: "broken file: kept, counted", file: "broken\n", do: func() error { return r.Reload(ctx, "SIGHUP") }, gen: 2, applied: 1,
			metrics: []string{"gatehost_config_generation 2", `gatehost_config_reloads_total{result="failure"} 1`}},
		{name: "the same broken file is not polled again", do: func() error { r.IfChanged(ctx); return nil }, gen: 2, applied: 1,
			metrics: []string{`gatehost_config_reloads_total{result="failure"} 1`}},
		{name: "fixed file: reloaded", file: "good: 3\n", do: func() error { return r.Reload(ctx, "SIGHUP") }, gen: 3, applied: 2,
			metrics: []string{"gatehost_config_generation 3", `gatehost_config_reloads_total{result="success"} 2`}},
	}
	for _, st := range steps {
		if st.file != "" {
			write(st.file)
		}
		err := st.do()
		if strings.HasPrefix(st.file, "broken") {
			assert.ErrorContains(t, err, "broken config", st.name)
		} else {
			assert.NoError(t, err, st.name)
		}
		assert.Equal(t, st.gen, r.Generation(), st.name)
		assert.Len(t, applied, st.applied, st.name)
		body := scrape()
		for _, want := range st.metrics {
			assert.Contains(t, body, want, st.name)
		}
	}
	assert.Equal(t, []uint64{2, 3}, applied)
	assert.Contains(t, logs.String(), "test: reload failed; the previous config keeps serving")
	assert.Contains(t, logs.String(), "test: config reloaded")
	r.Stop()
	assert.ErrorIs(t, r.Reload(ctx, "late"), frontend.ErrStopping)
}

// TestServeShutsDownWithinBound: Serve returns once its context is done,
// and a request still running past the bound is cut off.
func TestServeShutsDownWithinBound(t *testing.T) {
	ln, err := frontend.Listen("127.0.0.1:0", false, false)
	require.NoError(t, err)
	started := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cancelled := make(chan struct{})
	go func() {
		done <- frontend.Serve(ctx, srv, ln, "", "", nil, frontend.Shutdown{Timeout: 200 * time.Millisecond, Cancel: func() { close(cancelled) }})
	}()
	go func() { _, _ = http.Get("http://" + ln.Addr().String()) }()
	<-started
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	assert.Less(t, time.Since(start), 5*time.Second)
	select {
	case <-cancelled:
	default:
		t.Fatal("the runs past the bound were not cancelled")
	}
}
