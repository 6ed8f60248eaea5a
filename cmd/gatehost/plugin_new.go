package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"github.com/gatehost/gatehost/config"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/spf13/pflag"

	"github.com/gatehost/gatehost/internal/safefile"
)

// scaffold holds the templates of `gatehost plugin new`: a gate module with
// its own go.mod, a Makefile, cases and a passing test.
//
//go:embed scaffold
var scaffold embed.FS

const gatehostModule = "github.com/gatehost/gatehost"

var gateNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

type scaffoldData struct {
	Name    string // gate name, as in the descriptor
	Package string // Go package name
	Module  string // Go module path
	Replace string // local gatehost checkout, "" for a released version
	// Gatehost is the Makefile's default command for gatehost.
	Gatehost string
}

func cmdPluginNew(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("plugin new", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory to create (default ./NAME)")
	module := fs.String("module", "", "Go module path (default example.com/NAME)")
	local := fs.String("gatehost", "", "local gatehost checkout to build against (default: found at or above the working directory, else above the new directory)")
	release := fs.String("gatehost-version", "", "released gatehost version to require instead of a local checkout, such as v1.2.0 or latest")
	tidy := fs.Bool("tidy", true, "run 'go mod tidy' in the new module, to write go.sum")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gatehost plugin new [flags] NAME")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, func(n int) bool { return n == 1 }); done {
		return code
	}
	name := fs.Arg(0)
	if !gateNameRE.MatchString(name) {
		return fail(stderr, fmt.Errorf("%w: name %q: want lowercase letters, digits and '-', starting with a letter", errUsage, name))
	}
	if name == config.PolicyGate {
		// Front ends read a stage of a gate so named as the built-in
		// policy gate's (its config type-checked against the catalog).
		return fail(stderr, fmt.Errorf("%w: name %q is the built-in policy gate's: choose another", errUsage, name))
	}
	if *local != "" && *release != "" {
		return fail(stderr, fmt.Errorf("%w: --gatehost and --gatehost-version exclude each other", errUsage))
	}
	target := *dir
	if target == "" {
		target = name
	}
	target, err := filepath.Abs(target)
	if err != nil {
		return fail(stderr, err)
	}
	entries, err := safefile.ReadDir(target)
	switch {
	case errors.Is(err, safefile.ErrNotDir):
		return fail(stderr, fmt.Errorf("--dir: %w", err))
	case err == nil && len(entries) > 0:
		return fail(stderr, fmt.Errorf("%s exists and is not empty", target))
	}
	exe, _ := os.Executable()
	d := scaffoldData{Name: name, Package: strings.ReplaceAll(name, "-", ""), Module: *module,
		Gatehost: gatehostCommand(exe, exec.LookPath)}
	if d.Module == "" {
		d.Module = "example.com/" + name
	}
	if *release == "" {
		checkout := *local
		if checkout == "" {
			if wd, err := os.Getwd(); err == nil {
				checkout = findCheckout(wd)
			}
		}
		if checkout == "" {
			checkout = findCheckout(filepath.Dir(target))
		}
		if checkout == "" {
			*release = "latest"
		} else {
			if !isCheckout(checkout) {
				return fail(stderr, fmt.Errorf("%w: --gatehost %s: no go.mod of %s there", errUsage, checkout, gatehostModule))
			}
			abs, _ := filepath.Abs(checkout)
			rel, err := filepath.Rel(target, abs)
			if err != nil {
				rel = abs
			}
			d.Replace = filepath.ToSlash(rel)
			if !strings.HasPrefix(d.Replace, ".") && !filepath.IsAbs(d.Replace) {
				d.Replace = "./" + d.Replace
			}
		}
	}
	if err := writeScaffold(target, d); err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "created %s (module %s)\n", target, d.Module)
	if d.Replace != "" {
		fmt.Fprintf(stdout, "  builds against the gatehost checkout at %s (replace directive in go.mod)\n", d.Replace)
	}
	if *tidy || *release != "" {
		steps := [][]string{}
		if *release != "" {
			steps = append(steps, []string{"go", "get", gatehostModule + "@" + *release})
		}
		steps = append(steps, []string{"go", "mod", "tidy"})
		for _, s := range steps {
			fmt.Fprintf(stdout, "  $ %s\n", strings.Join(s, " "))
			cmd := exec.CommandContext(ctx, s[0], s[1:]...)
			cmd.Dir = target
			cmd.Stdout, cmd.Stderr = stderr, stderr
			if err := cmd.Run(); err != nil {
				return fail(stderr, fmt.Errorf("%s in %s: %w (the files are written; fix and rerun it there)", strings.Join(s, " "), target, err))
			}
		}
	}
	fmt.Fprintf(stdout, "next:\n  cd %s\n  make build test check   # check runs %s\n", target, d.Gatehost)
	return 0
}

// gatehostCommand is the command the scaffold's Makefile runs for `make
// check`: the gatehost that wrote the scaffold, so that the next step it
// prints works whether or not gatehost is installed. It is "gatehost" when
// PATH finds that very binary, else exe's absolute path, quoted for the
// shell and escaped for make.
func gatehostCommand(exe string, lookPath func(string) (string, error)) string {
	if exe == "" {
		return "gatehost"
	}
	if p, err := lookPath("gatehost"); err == nil && sameFile(p, exe) {
		return "gatehost"
	}
	cmd := strings.ReplaceAll(exe, "$", "$$")
	if strings.ContainsAny(cmd, " \t'\"\\#;&|<>()*?[]{}~`") {
		cmd = "'" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
	}
	return cmd
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// findCheckout returns the nearest directory at or above dir that holds the
// gatehost module, or "".
func findCheckout(dir string) string {
	for {
		if isCheckout(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// isCheckout: dir holds the gatehost module's go.mod and its sources (a
// stray go.mod naming the module is not a checkout).
func isCheckout(dir string) bool {
	b, err := safefile.ReadFile(filepath.Join(dir, "go.mod"), 1<<20)
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+gatehostModule+"\n")) {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "sdk", "sdk.go"))
	return err == nil
}

func writeScaffold(target string, d scaffoldData) error {
	return fs.WalkDir(scaffold, "scaffold", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "scaffold/"), ".tmpl")
		if rel == "gitignore" {
			rel = ".gitignore"
		}
		src, err := scaffold.ReadFile(p)
		if err != nil {
			return err
		}
		t, err := template.New(path.Base(p)).Parse(string(src))
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := t.Execute(&out, d); err != nil {
			return err
		}
		dst := filepath.Join(target, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, out.Bytes(), 0o644)
	})
}
