// Package gitchanges derives a merge subject from a git repository with the
// git command-line tool: the files that differ between two refs, with their
// content on each side, and a temporary worktree of the head side for
// build/test checks.
package gitchanges

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
)

// ErrGit wraps a failed git command; the error text carries git's stderr.
var ErrGit = errors.New("git failed")

// Options tune Changes. The zero value is valid.
type Options struct {
	// MaxFileBytes caps the content sent for one side of one file;
	// larger sides are sent with ContentOmitted. Default 1 MiB.
	MaxFileBytes int
}

// Changes returns the merge subject of the changes from base to head in the
// repository at repo: every path git reports as differing (renames are a
// delete plus an add), with the content of each side that exists. Content
// is sent for Go files (.go) that are valid UTF-8 and within
// MaxFileBytes; for other files it is omitted (FileChange.ContentOmitted):
// the gate only needs to know they changed. Base and Head are the resolved
// commit ids.
func Changes(ctx context.Context, repo, base, head string, opts Options) (abi.Merge, error) {
	maxBytes := opts.MaxFileBytes
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	baseID, err := resolve(ctx, repo, base)
	if err != nil {
		return abi.Merge{}, err
	}
	headID, err := resolve(ctx, repo, head)
	if err != nil {
		return abi.Merge{}, err
	}
	out, err := git(ctx, repo, "diff", "--no-renames", "--no-ext-diff", "--name-status", "-z", baseID, headID, "--")
	if err != nil {
		return abi.Merge{}, err
	}
	m := abi.Merge{Base: baseID, Head: headID, FileChanges: []abi.FileChange{}}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields) == 1 && fields[0] == "" {
		return m, nil
	}
	if len(fields)%2 != 0 {
		return abi.Merge{}, fmt.Errorf("gitchanges: unexpected git diff output %q", out)
	}
	for i := 0; i < len(fields); i += 2 {
		status, path := fields[i], fields[i+1]
		fc := abi.FileChange{Path: path}
		send := strings.HasSuffix(path, ".go")
		side := func(rev string) (*string, error) {
			b, err := git(ctx, repo, "cat-file", "blob", rev+":"+path)
			if err != nil {
				return nil, err
			}
			if !send || len(b) > maxBytes || !utf8.Valid(b) {
				fc.ContentOmitted = true
				return new(string), nil
			}
			s := string(b)
			return &s, nil
		}
		if status != "A" {
			if fc.Before, err = side(baseID); err != nil {
				return abi.Merge{}, err
			}
		}
		if status != "D" {
			if fc.After, err = side(headID); err != nil {
				return abi.Merge{}, err
			}
		}
		if fc.ContentOmitted { // both sides say so consistently
			if fc.Before != nil {
				*fc.Before = ""
			}
			if fc.After != nil {
				*fc.After = ""
			}
		}
		m.FileChanges = append(m.FileChanges, fc)
	}
	return m, nil
}

// Worktree checks out rev (detached) in a new temporary directory and
// returns its absolute path and a cleanup function that removes the
// worktree and the directory. Call cleanup even when later steps fail; it
// is safe to call more than once.
func Worktree(ctx context.Context, repo, rev string) (dir string, cleanup func() error, err error) {
	id, err := resolve(ctx, repo, rev)
	if err != nil {
		return "", nil, err
	}
	parent, err := os.MkdirTemp("", "gatehost-merge-")
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(parent, "worktree")
	done := false
	cleanup = func() error {
		if done {
			return nil
		}
		done = true
		// A fresh context: cleanup must happen even after ctx is canceled.
		_, gerr := git(context.WithoutCancel(ctx), repo, "worktree", "remove", "--force", dir)
		rerr := os.RemoveAll(parent)
		if rerr == nil && gerr != nil {
			// The directory is gone either way; drop git's record of it.
			_, gerr = git(context.WithoutCancel(ctx), repo, "worktree", "prune")
		}
		return errors.Join(gerr, rerr)
	}
	if _, err := git(ctx, repo, "worktree", "add", "--detach", "--quiet", dir, id); err != nil {
		return "", nil, errors.Join(err, cleanup())
	}
	return dir, cleanup, nil
}

func resolve(ctx context.Context, repo, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("gitchanges: bad revision %q", rev)
	}
	out, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("gitchanges: %q is not a commit in %s: %w", rev, repo, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func git(ctx context.Context, repo string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	// No pager, no prompts, no user config changing the output.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: git %s: %w: %s", ErrGit, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
