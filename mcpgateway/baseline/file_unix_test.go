//go:build unix

package baseline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/filelock"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/mcpgateway/baseline/baselinetest"
)

func TestFileLockHeldByAnother(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	f := openFile(t, path)
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, filelock.Lock(lock))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = f.Approve(ctx, []baseline.Entry{baselinetest.Entry(t, "up", "a", "a1", "alice")})
	require.ErrorIs(t, err, baseline.ErrStore)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "another writer holds it")
	assert.Less(t, time.Since(start), 5*time.Second)

	// Readers take no lock.
	s, err := f.Load(context.Background())
	require.NoError(t, err)
	assert.Zero(t, s.Len())

	// Once released, the write goes through.
	require.NoError(t, lock.Close())
	s, err = f.Approve(context.Background(), []baseline.Entry{baselinetest.Entry(t, "up", "a", "a1", "alice")})
	require.NoError(t, err)
	assert.Equal(t, 1, s.Len())
}

func TestFileNotRegular(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	_, err := baseline.OpenFile(path)
	require.ErrorIs(t, err, baseline.ErrInvalid)
	assert.Contains(t, err.Error(), "named pipe")
}

const (
	childPathEnv   = "GATEHOST_BASELINE_CHILD_PATH"
	childWriterEnv = "GATEHOST_BASELINE_CHILD_WRITER"
)

// TestFileChild is a child process of TestFileAddIfAbsentProcesses; it
// does nothing in an ordinary run. It waits for PATH.go to exist, adds the
// first listing of four tools with its own descriptions, and prints the
// baseline AddIfAbsent returned.
func TestFileChild(t *testing.T) {
	path := os.Getenv(childPathEnv)
	if path == "" {
		t.Skip("child of TestFileAddIfAbsentProcesses only")
	}
	writer := os.Getenv(childWriterEnv)
	f, err := baseline.OpenFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	for {
		if _, err := os.Stat(path + ".go"); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var entries []baseline.Entry
	for k := range 4 {
		entries = append(entries, baselinetest.Entry(t, "up", fmt.Sprintf("t%d", k), "process "+writer, baseline.ApprovedByFirstListing))
	}
	s, err := f.AddIfAbsent(context.Background(), entries)
	if err != nil {
		fmt.Fprintln(os.Stderr, "add:", err)
		os.Exit(4)
	}
	out, _ := baseline.Marshal(s)
	os.Stdout.Write(out)
}

// TestFileAddIfAbsentProcesses runs several processes adding different
// first listings of the same tools at once: all end with one baseline,
// each tool's entry from one of them.
func TestFileAddIfAbsentProcesses(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "baseline.json")
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range procs {
		cmd := exec.Command(exe, "-test.run=^TestFileChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childPathEnv+"="+path, childWriterEnv+"="+strconv.Itoa(i))
		outs[i] = &bytes.Buffer{}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = outs[i], &stderr
		require.NoError(t, cmd.Start())
		cmds[i] = cmd
	}
	time.Sleep(200 * time.Millisecond) // let them reach the barrier
	require.NoError(t, os.WriteFile(path+".go", nil, 0o644))
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "process %d", i)
	}
	final, err := os.ReadFile(path)
	require.NoError(t, err)
	set, err := baseline.Parse(final)
	require.NoError(t, err)
	require.Equal(t, 4, set.Len())
	for i, out := range outs {
		// The child's output ends with the test framework's "PASS".
		doc, _, ok := bytes.Cut(out.Bytes(), []byte("\n}\n"))
		require.True(t, ok, "process %d printed %q", i, out.String())
		assert.Equal(t, string(final), string(doc)+"\n}\n", "process %d saw the one baseline", i)
	}
	var writers []string
	for _, e := range set.Entries() {
		var def struct{ Description string }
		require.NoError(t, json.Unmarshal(e.Definition, &def))
		writers = append(writers, def.Description)
	}
	t.Logf("entries from %v", writers)
}
