// Package testwasm builds gate modules for tests: Go guests through the go
// build cache, WAT sources through wat2wasm. Each module is built once per
// test binary.
package testwasm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var (
	mu    sync.Mutex
	built = map[string][]byte{}
	dir   string
)

// Root returns the repository root: the nearest directory above the working
// directory that holds go.mod.
func Root() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("testwasm: no go.mod above the working directory")
		}
		d = parent
	}
}

// CacheDir is a compilation cache shared by every test binary of a
// machine, so each module is compiled by wazero once, not once per test.
// Its entries are authenticated (a layout of its own: the name says so).
func CacheDir() string { return filepath.Join(os.TempDir(), "gatehost-test-cache-auth") }

func outDir() (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, err := os.MkdirTemp("", "gatehost-testwasm-")
	if err != nil {
		return "", err
	}
	dir = d
	return d, nil
}

// Main runs the tests of m and removes the modules built meanwhile; call it
// from TestMain: func TestMain(m *testing.M) { testwasm.Main(m) }. setup,
// if non-nil, runs first; an error from it fails the binary.
func Main(m interface{ Run() int }, setup func() error) {
	code := 1
	if setup != nil {
		if err := setup(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			Cleanup()
			os.Exit(code)
		}
	}
	code = m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the directory the modules of this test binary were built
// into. The wazero compilation cache (CacheDir) is kept: it is shared.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
		dir = ""
		built = map[string][]byte{}
	}
}

// Go builds the Go guest package pkg (a path relative to the repository
// root, such as "plugins/static-verify/wasm") with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared and returns the module's path.
func Go(pkg string) (string, error) {
	env := []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}
	// GUEST_GOEXPERIMENT sets GOEXPERIMENT for guests only, so a benchmark
	// can compare guest builds against the same native baseline.
	if v, ok := os.LookupEnv("GUEST_GOEXPERIMENT"); ok {
		env = append(env, "GOEXPERIMENT="+v)
	}
	return goBuild("go:"+pkg, pkg, strings.ReplaceAll(pkg, "/", "_")+".wasm", env, "-buildmode=c-shared")
}

// goBuild builds pkg once per test binary (cached under key) into the
// output directory as name, with env added and flags before -trimpath.
func goBuild(key, pkg, name string, env []string, flags ...string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[key]; ok {
		return string(p), nil
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	out, err := outDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(out, name)
	args := append(append([]string{"build"}, flags...), "-trimpath", "-o", path, "./"+pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testwasm: go build %s: %w\n%s", pkg, err, b)
	}
	built[key] = []byte(path)
	return path, nil
}

// WAT assembles the WAT file src (relative to the repository root) with
// wat2wasm and returns the module's bytes. It fails when wat2wasm is not
// installed (Debian package wabt).
func WAT(src string) ([]byte, error) {
	mu.Lock()
	defer mu.Unlock()
	key := "wat:" + src
	if b, ok := built[key]; ok {
		return b, nil
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	out, err := outDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(out, strings.ReplaceAll(src, "/", "_")+".wasm")
	cmd := exec.Command("wat2wasm", "-o", path, filepath.Join(root, src))
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testwasm: wat2wasm %s: %w\n%s", src, err, b)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	built[key] = b
	return b, nil
}

// Binary builds the Go command pkg (relative to the repository root, such
// as "cmd/gatehost") for this machine, without the race detector, and
// returns the executable's path: for tests that run it as separate
// processes.
func Binary(pkg string) (string, error) {
	return goBuild("bin:"+pkg, pkg, filepath.Base(pkg), nil)
}
