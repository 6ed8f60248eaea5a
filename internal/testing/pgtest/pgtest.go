// Package pgtest runs a real PostgreSQL server for tests: a new cluster in
// a temporary directory (initdb), started with pg_ctl on a loopback port
// and stopped at the end. It uses the server binaries of Debian's
// postgresql package (/usr/lib/postgresql/N/bin) or those on $PATH, or the
// directory $GATEHOST_TEST_PG_BIN names.
//
// Tests that need PostgreSQL call Start (or Shared). They are skipped only
// under go test -short (make test-short) or when GATEHOST_TEST_POSTGRES=off;
// otherwise a missing or failing server fails the test, so that CI (make
// test, without -short) never passes by skipping them.
//
// initdb and pg_ctl refuse to run as root; as root the cluster's files
// belong to the "postgres" user and the commands run as it (runuser).
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvSwitch names the variable that, set to "off", skips PostgreSQL tests.
const EnvSwitch = "GATEHOST_TEST_POSTGRES"

// Cluster is a running test server. Its methods are safe for concurrent
// use.
type Cluster struct {
	dir  string // holds data/, the socket and the server log
	data string
	port int
	bin  string
	uid  *runAs

	mu      sync.Mutex
	running bool
	dbs     int
}

type runAs struct {
	name     string
	uid, gid int
}

// Enabled reports whether PostgreSQL tests run (EnvSwitch is not "off").
func Enabled() bool { return os.Getenv(EnvSwitch) != "off" }

// Skip skips tb when PostgreSQL tests are off, or under -short.
func Skip(tb testing.TB) {
	tb.Helper()
	if !Enabled() {
		tb.Skipf("%s=off", EnvSwitch)
	}
	if testing.Short() {
		tb.Skip("needs PostgreSQL: skipped under -short (make test runs it)")
	}
}

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// Shared returns one cluster for the whole test binary, started on first
// use; call StopShared from TestMain after m.Run. Each test should take a
// database of its own with NewDatabase.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	Skip(tb)
	sharedOnce.Do(func() { shared, sharedErr = New() })
	if sharedErr != nil {
		tb.Fatalf("pgtest: %v", sharedErr)
	}
	return shared
}

// StopShared stops the cluster Shared started, if any, and removes its
// files.
func StopShared() {
	if shared != nil {
		_ = shared.Destroy()
	}
}

// Start starts a cluster of the test's own, destroyed when tb ends.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	Skip(tb)
	c, err := New()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { _ = c.Destroy() })
	return c
}

// New creates and starts a cluster in a new temporary directory. Destroy
// stops it and removes the directory.
func New() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gatehost-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, data: filepath.Join(dir, "data"), bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user of the postgresql package: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.uid = &runAs{name: u.Username, uid: uid, gid: gid}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if c.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// binDir finds the directory holding initdb and pg_ctl.
func binDir() (string, error) {
	if d := os.Getenv("GATEHOST_TEST_PG_BIN"); d != "" {
		return d, nil
	}
	// Debian puts the server binaries outside $PATH; prefer the newest.
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, pg_ctl): install the postgresql package (apt-get install postgresql) or set GATEHOST_TEST_PG_BIN; set " + EnvSwitch + "=off to skip these tests")
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// command runs a server binary as the cluster's owner, bounded by timeout.
func (c *Cluster) command(timeout time.Duration, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.uid != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.uid.name, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return nil
}

func (c *Cluster) initdb() error {
	return c.command(2*time.Minute, "initdb", "-D", c.data, "--auth=trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
}

// Start starts the server (again, after Stop) and waits until it accepts
// connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return nil
	}
	// Small and quick: tests never need durability across a power loss,
	// only across a server restart, which fsync=off keeps.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB",
		c.port, c.dir)
	if err := c.command(2*time.Minute, "pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "110", "-o", opts, "start"); err != nil {
		return err
	}
	c.running = true
	return nil
}

// Stop stops the server (fast mode: open sessions are disconnected).
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return nil
	}
	if err := c.command(2*time.Minute, "pg_ctl", "-D", c.data, "-m", "fast", "-w", "-t", "110", "stop"); err != nil {
		return err
	}
	c.running = false
	return nil
}

// Restart stops and starts the server.
func (c *Cluster) Restart() error {
	if err := c.Stop(); err != nil {
		return err
	}
	return c.Start()
}

// Destroy stops the server and removes its files.
func (c *Cluster) Destroy() error {
	err := c.Stop()
	return errors.Join(err, os.RemoveAll(c.dir))
}

// Port is the loopback TCP port the server listens on.
func (c *Cluster) Port() int { return c.port }

// DSN returns the connection string of database db.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// NewDatabase creates an empty database and returns its DSN; it is
// dropped when tb ends (the cluster may outlive the test).
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	c.mu.Lock()
	c.dbs++
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.dbs)
	c.mu.Unlock()
	if err := c.exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { _ = c.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	return c.DSN(name)
}

// exec runs one statement on the postgres database.
func (c *Cluster) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
