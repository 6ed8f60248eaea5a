//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/server"
)

// pathConfig is every path a config file can name; the zero value of a
// field means the valid default of newPathConfig.
type pathConfig struct {
	plugin, eventLog, sessions, cacheDir        string
	catalog, domainCatalog, documents, collFile string
	sqlite                                      string // "" leaves the sqlite domain out
}

// specials is a directory holding one file of each kind a configured path
// must not be, and the valid files of a config.
type specials struct {
	dir                              string
	fifo, linkFIFO, adir, regular    string
	catalogDirWithFIFO, collectionOK string
}

func newSpecials(t *testing.T) specials {
	t.Helper()
	d := t.TempDir()
	s := specials{
		dir: d, fifo: filepath.Join(d, "fifo"), linkFIFO: filepath.Join(d, "link-to-fifo"),
		adir: filepath.Join(d, "adir"), regular: filepath.Join(d, "regular.json"),
		catalogDirWithFIFO: filepath.Join(d, "catalog-dir"), collectionOK: filepath.Join(d, "repos.json"),
	}
	require.NoError(t, syscall.Mkfifo(s.fifo, 0o644))
	require.NoError(t, os.Symlink(s.fifo, s.linkFIFO))
	require.NoError(t, os.Mkdir(s.adir, 0o755))
	require.NoError(t, os.WriteFile(s.regular, []byte("{}"), 0o644))
	// A catalog directory whose one *.json entry is a named pipe.
	require.NoError(t, os.Mkdir(s.catalogDirWithFIFO, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.catalogDirWithFIFO, "a.json"), []byte(`{"name":"get_me"}`), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(s.catalogDirWithFIFO, "b.json"), 0o644))
	// The github-bench domain's one collection, as a collection file.
	require.NoError(t, os.WriteFile(s.collectionOK, []byte(`{"octo-org/widgets": {"archived": false, "default_branch": "main", "branches": ["main"], "open_issues": 1}}`), 0o644))
	return s
}

// overCap makes a sparse file one byte over max: its size is refused from
// fstat, before any read.
func (s specials) overCap(t *testing.T, name string, max int64) string {
	t.Helper()
	p := filepath.Join(s.dir, name)
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	require.NoError(t, os.Truncate(p, max+1))
	return p
}

func (s specials) writeConfig(t *testing.T, pc pathConfig) string {
	t.Helper()
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	bench := filepath.Join(repoRoot, "testdata/domains/github-bench")
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - format: mcp
      path: %s
      server: github
event_log:
  path: %s
sessions:
  path: %s
cache_dir: %s
plugins:
  sv:
    path: %s
domains:
  docs:
    catalog: %s
    source:
      kind: documents
      path: %s
  colls:
    catalog: %s
    source:
      kind: documents
      collections:
        repos: %s
`, or(pc.catalog, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server")),
		or(pc.eventLog, filepath.Join(s.dir, "var", "events.jsonl")),
		or(pc.sessions, filepath.Join(s.dir, "var", "sessions.json")),
		or(pc.cacheDir, testwasm.CacheDir()), or(pc.plugin, svWasm),
		or(pc.domainCatalog, filepath.Join(bench, "domain.yaml")), or(pc.documents, filepath.Join(bench, "db.json")),
		filepath.Join(bench, "domain.yaml"), or(pc.collFile, s.collectionOK))
	if pc.sqlite != "" {
		cfg += fmt.Sprintf("  sql:\n    catalog: %s\n    source:\n      kind: sqlite\n      path: %s\n", filepath.Join(bench, "domain.yaml"), pc.sqlite)
	}
	cfg += `pipelines:
  admission:
    subject: proposal
    stages:
      - plugin: sv
        timeout: 60s
        capabilities: [catalog, schema]
`
	p := filepath.Join(t.TempDir(), "gatehost.yaml")
	require.NoError(t, os.WriteFile(p, []byte(cfg), 0o644))
	return p
}

// kindCase is one wrong file at one configured path.
type kindCase struct {
	name   string
	path   string
	want   error  // the sentinel
	reason string // the end of the message after the path
}

func (s specials) fileKinds() []kindCase {
	return []kindCase{
		{name: "named pipe", path: s.fifo, want: safefile.ErrNotRegular, reason: "not a regular file (named pipe)"},
		{name: "symlink to a named pipe", path: s.linkFIFO, want: safefile.ErrNotRegular, reason: "not a regular file (named pipe)"},
		{name: "/dev/zero", path: "/dev/zero", want: safefile.ErrNotRegular, reason: "not a regular file (character device)"},
		{name: "directory", path: s.adir, want: safefile.ErrNotRegular, reason: "not a regular file (directory)"},
	}
}

// TestConfiguredPathKinds: every file the config names that is a named
// pipe, a device, a directory where a file belongs, a file where a
// directory belongs, or over its cap is refused while loading the config,
// with the key, the path and the reason, and a sentinel for errors.Is.
func TestConfiguredPathKinds(t *testing.T) {
	s := newSpecials(t)
	type keyCase struct {
		key   string
		set   func(*pathConfig, string)
		kinds []kindCase
	}
	fileKinds := s.fileKinds()
	tooLarge := func(name string, max int64) kindCase {
		return kindCase{name: "over the cap", path: s.overCap(t, name, max), want: safefile.ErrTooLarge,
			reason: fmt.Sprintf("file too large (more than %d bytes)", max)}
	}
	withCap := func(k kindCase) []kindCase { return append(append([]kindCase{}, fileKinds...), k) }
	keys := []keyCase{
		{key: "plugins.sv.path", set: func(c *pathConfig, p string) { c.plugin = p }, kinds: fileKinds},
		{key: "event_log.path", set: func(c *pathConfig, p string) { c.eventLog = p }, kinds: fileKinds},
		{key: "sessions.path", set: func(c *pathConfig, p string) { c.sessions = p }, kinds: fileKinds},
		{key: "cache_dir", set: func(c *pathConfig, p string) { c.cacheDir = p }, kinds: []kindCase{
			{name: "regular file", path: s.regular, want: safefile.ErrNotDir, reason: "not a directory (regular file)"},
			{name: "named pipe", path: s.fifo, want: safefile.ErrNotDir, reason: "not a directory (named pipe)"},
			{name: "symlink to a named pipe", path: s.linkFIFO, want: safefile.ErrNotDir, reason: "not a directory (named pipe)"},
			{name: "/dev/zero", path: "/dev/zero", want: safefile.ErrNotDir, reason: "not a directory (character device)"},
		}},
		// A catalog source may be a directory: it is the entries that must
		// be regular files.
		{key: "catalog.sources[0].path", set: func(c *pathConfig, p string) { c.catalog = p }, kinds: []kindCase{
			fileKinds[0], fileKinds[1], fileKinds[2],
			{name: "directory entry is a named pipe", path: s.catalogDirWithFIFO, want: safefile.ErrNotRegular, reason: "not a regular file (named pipe)"},
			tooLarge("catalog.json", catalog.MaxFileBytes),
		}},
		{key: "domains.docs.catalog", set: func(c *pathConfig, p string) { c.domainCatalog = p },
			kinds: withCap(tooLarge("domain.yaml", domain.MaxCatalogBytes))},
		{key: "domains.docs.source.path", set: func(c *pathConfig, p string) { c.documents = p },
			kinds: withCap(tooLarge("db.json", datasource.MaxFileBytes))},
		{key: "domains.colls.source.collections", set: func(c *pathConfig, p string) { c.collFile = p },
			kinds: withCap(tooLarge("repos-big.json", datasource.MaxFileBytes))},
		{key: "domains.sql.source.path", set: func(c *pathConfig, p string) { c.sqlite = p }, kinds: fileKinds},
	}
	for _, k := range keys {
		for _, kc := range k.kinds {
			t.Run(k.key+"/"+kc.name, func(t *testing.T) {
				var pc pathConfig
				k.set(&pc, kc.path)
				cfg := s.writeConfig(t, pc)
				err := safefiletest.Returns(t, func() error {
					l, err := config.Load(cfg)
					if l != nil {
						_ = l.Close()
					}
					return err
				})
				assert.ErrorIs(t, err, kc.want)
				msg := err.Error()
				assert.True(t, strings.HasPrefix(msg, "config "+cfg+": "+k.key+": "), "names the file and the key: %s", msg)
				wantPath := kc.path
				if kc.path == s.catalogDirWithFIFO {
					wantPath = filepath.Join(kc.path, "b.json")
				}
				assert.True(t, strings.HasSuffix(msg, wantPath+": "+kc.reason), "names the path and the reason: %s", msg)
			})
		}
	}
	t.Run("valid", func(t *testing.T) {
		l, err := config.Load(s.writeConfig(t, pathConfig{}))
		require.NoError(t, err)
		_ = l.Close()
	})
}

// TestConfigFileKinds: the config file itself, given with --config.
func TestConfigFileKinds(t *testing.T) {
	s := newSpecials(t)
	kinds := append(s.fileKinds(), kindCase{name: "over the cap", path: s.overCap(t, "big.yaml", config.MaxFileBytes),
		want: safefile.ErrTooLarge, reason: fmt.Sprintf("file too large (more than %d bytes)", config.MaxFileBytes)})
	for _, kc := range kinds {
		t.Run(kc.name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error { _, err := config.Load(kc.path); return err })
			require.ErrorIs(t, err, kc.want)
			assert.Equal(t, "config "+kc.path+": "+kc.reason, err.Error())
		})
	}
	t.Run("unsupported extension", func(t *testing.T) {
		p := filepath.Join(s.dir, "gatehost.conf")
		require.NoError(t, os.WriteFile(p, []byte("pool_size: 1\n"), 0o644))
		_, err := config.Load(p)
		assert.EqualError(t, err, `config `+p+`: unsupported config type "conf" (name it .yaml, .yml, .toml or .json)`)
	})
}

// TestConfiguredPathsExit2: through the CLI, each refusal exits 2 at once
// with one line naming the key — for check's config, serve's --token-file
// and TLS files, and a plugin module over its cap (refused by the host as
// it reads the module).
func TestConfiguredPathsExit2(t *testing.T) {
	s := newSpecials(t)
	good := s.writeConfig(t, pathConfig{})
	subj := proposal("read-then-write.json")
	bigModule := s.overCap(t, "big.wasm", host.MaxModuleFileBytes)
	tests := []struct {
		name string
		args []string
		want []string // substrings of the one line on stderr
	}{
		{name: "check: plugin named pipe", args: []string{"check", "--config", s.writeConfig(t, pathConfig{plugin: s.fifo}), subj},
			want: []string{"plugins.sv.path: " + s.fifo + ": not a regular file (named pipe)"}},
		{name: "check: plugin over the cap", args: []string{"check", "--config", s.writeConfig(t, pathConfig{plugin: bigModule}), subj},
			want: []string{"plugins.sv.path: ", bigModule + ": file too large (more than 67108864 bytes)"}},
		{name: "check: event log /dev/zero", args: []string{"check", "--config", s.writeConfig(t, pathConfig{eventLog: "/dev/zero"}), subj},
			want: []string{"event_log.path: /dev/zero: not a regular file (character device)"}},
		{name: "check: config named pipe", args: []string{"check", "--config", s.linkFIFO, subj},
			want: []string{"config " + s.linkFIFO + ": not a regular file (named pipe)"}},
		{name: "log verify: event log named pipe", args: []string{"log", "verify", "--config", s.writeConfig(t, pathConfig{eventLog: s.fifo})},
			want: []string{"event_log.path: " + s.fifo + ": not a regular file (named pipe)"}},
		{name: "session show: sessions named pipe", args: []string{"session", "show", "--config", s.writeConfig(t, pathConfig{sessions: s.linkFIFO}), "--session", "s-1"},
			want: []string{"sessions.path: " + s.linkFIFO + ": not a regular file (named pipe)"}},
		{name: "serve: token file named pipe", args: []string{"serve", "--config", good, "--token-file", s.fifo},
			want: []string{"--token-file: " + s.fifo + ": not a regular file (named pipe)"}},
		{name: "serve: token file /dev/zero", args: []string{"serve", "--config", good, "--token-file", "/dev/zero"},
			want: []string{"--token-file: /dev/zero: not a regular file (character device)"}},
		{name: "serve: token file over the cap", args: []string{"serve", "--config", good, "--token-file", s.overCap(t, "tokens", server.MaxTokenFileBytes)},
			want: []string{"--token-file: ", "file too large (more than 1048576 bytes)"}},
		{name: "serve: TLS certificate named pipe", args: []string{"serve", "--config", good, "--tls-cert", s.linkFIFO, "--tls-key", s.regular},
			want: []string{"--tls-cert: " + s.linkFIFO + ": not a regular file (named pipe)"}},
		{name: "serve: TLS key directory", args: []string{"serve", "--config", good, "--tls-cert", s.regular, "--tls-key", s.adir},
			want: []string{"--tls-key: " + s.adir + ": not a regular file (directory)"}},
		{name: "plugin inspect: named pipe", args: []string{"plugin", "inspect", s.fifo},
			want: []string{s.fifo + ": not a regular file (named pipe)"}},
		{name: "plugin pin: config named pipe", args: []string{"plugin", "pin", "--config", s.fifo},
			want: []string{"config " + s.fifo + ": not a regular file (named pipe)"}},
		{name: "catalog diff: named pipe", args: []string{"catalog", "diff", "--config", good, s.fifo},
			want: []string{s.fifo + ": not a regular file (named pipe)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				code     int
				out, err string
			}
			r := safefiletest.Returns(t, func() result {
				code, out, errOut := runCLI(tt.args...)
				return result{code, out, errOut}
			})
			assert.Equal(t, exitUsage, r.code, "stdout: %s", r.out)
			assert.Equal(t, 1, strings.Count(r.err, "\n"), "one line: %q", r.err)
			for _, w := range tt.want {
				assert.Contains(t, r.err, w)
			}
		})
	}
}

// TestSubjectWaitEndsWithContext: a subject may be a pipe, which is waited
// on like stdin; a signal (the context) ends the wait.
func TestSubjectWaitEndsWithContext(t *testing.T) {
	s := newSpecials(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := readSubject(ctx, s.fifo, nil, 1<<20); errc <- err }()
	cancel()
	// The abandoned read waits on the pipe until a writer comes: be one at
	// the end, so that it ends.
	t.Cleanup(func() {
		if f, err := os.OpenFile(s.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	err := safefiletest.Returns(t, func() error { return <-errc })
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "subject "+s.fifo)

	// /dev/zero never ends: the subject cap does.
	err = safefiletest.Returns(t, func() error { _, err := readSubject(context.Background(), "/dev/zero", nil, 1024); return err })
	assert.ErrorContains(t, err, "larger than max_subject_bytes (1024 bytes)")

	// A pipe with a writer is read. (Another pipe: the read abandoned above
	// is still waiting on the first one.)
	fifo := filepath.Join(s.dir, "fifo2")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, _ = f.WriteString(`{"actions":[]}`)
			f.Close()
		}
	}()
	b, err := readSubject(context.Background(), fifo, nil, 1024)
	require.NoError(t, err)
	assert.JSONEq(t, `{"actions":[]}`, string(b))
}

// TestSIGTERMWhileReadingSubject: a CLI process waiting on a subject pipe
// that never delivers exits 2 on SIGTERM (configured files never make it
// wait: they are refused).
func TestSIGTERMWhileReadingSubject(t *testing.T) {
	s := newSpecials(t)
	cfg := s.writeConfig(t, pathConfig{})
	cmd := exec.Command(os.Args[0], "check", "--config", cfg, s.fifo)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Opening the write end without blocking succeeds once the child has
	// the pipe open for reading; holding it open (and writing nothing)
	// keeps the child's read waiting.
	var w *os.File
	require.Eventually(t, func() bool {
		f, err := os.OpenFile(s.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		w = f
		return err == nil
	}, 2*time.Minute, 10*time.Millisecond, "the child never opened the subject")
	defer w.Close()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := safefiletest.Returns(t, cmd.Wait)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	assert.Equal(t, exitUsage, ee.ExitCode(), "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "gatehost: subject "+s.fifo+": ")
}
