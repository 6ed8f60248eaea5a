package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/subject/gitchanges"
	"github.com/gatehost/gatehost/internal/safefile"
)

// cmdMergeVerify derives a merge subject from a git repository (base..head),
// checks out head in a temporary worktree for the check capability, runs a
// merge pipeline and removes the worktree again, whatever happened.
func cmdMergeVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge-verify", "Usage: gatehost merge-verify --repo PATH --base REF --head REF [--footprint F] [--waiver F] [flags]\n", stderr,
		flagConfig|flagPipeline|flagOutput|flagRequestID|flagLogLevel)
	fs.setUsage("pipeline", "pipeline to run (default: the only merge pipeline)")
	repo := fs.String("repo", "", "git repository (required)")
	base := fs.String("base", "", "base revision: what the changes are integrated into (required)")
	head := fs.String("head", "", "head revision: the changes to verify (required)")
	footprintPath := fs.String("footprint", "", "JSON file: the declared footprint, [{\"file\",\"symbol\"}]")
	waiverPath := fs.String("waiver", "", "JSON file: an audited waiver {\"reason\",\"approved_by\",\"scope\"}")
	if code, done := fs.parse(args, exactly(0)); done {
		return code
	}
	if *repo == "" || *base == "" || *head == "" {
		fs.Usage()
		return exitUsage
	}
	var footprint []abi.SymbolRef
	var err error
	if *footprintPath != "" {
		if footprint, err = readFootprint(*footprintPath); err != nil {
			return fail(stderr, err)
		}
	}
	var waiver *abi.Waiver
	if *waiverPath != "" {
		if waiver, err = readWaiver(*waiverPath); err != nil {
			return fail(stderr, err)
		}
	}
	logger, cfg, err := fs.setup()
	if err != nil {
		return fail(stderr, err)
	}
	defer cfg.Close()
	h, closeAll, err := openHost(ctx, cfg, logger)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeAll()
	info, err := pickMergePipeline(h.Pipelines(), pipelineFlag(fs.pipeline))
	if err != nil {
		return fail(stderr, err)
	}

	m, err := gitchanges.Changes(ctx, *repo, *base, *head, gitchanges.Options{})
	if err != nil {
		return fail(stderr, err)
	}
	m.Footprint, m.Waiver = footprint, waiver
	subj, err := json.Marshal(m)
	if err != nil {
		return fail(stderr, err)
	}
	dir, cleanup, err := gitchanges.Worktree(ctx, *repo, m.Head)
	if err != nil {
		return fail(stderr, err)
	}
	defer func() {
		if err := cleanup(); err != nil {
			fmt.Fprintln(stderr, "gatehost: removing the temporary worktree:", err)
		}
	}()
	d, err := h.Check(ctx, info.Name, subj, host.RunOptions{RequestID: fs.requestID, Worktree: dir})
	if d == nil {
		return fail(stderr, err)
	}
	if fs.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if e := enc.Encode(d); e != nil {
			return fail(stderr, e)
		}
	} else {
		fmt.Fprintf(stdout, "merge %s..%s  files=%d\n", short(m.Base), short(m.Head), len(m.FileChanges))
		printDecision(stdout, d)
		printCheckTail(stdout, d)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gatehost:", err)
	}
	return verdictExit(d.Verdict)
}

func pickMergePipeline(all []host.PipelineInfo, name string) (host.PipelineInfo, error) {
	if name != "" {
		p, err := pickPipeline(all, name)
		if err == nil && p.Subject != abi.SubjectMerge {
			return p, fmt.Errorf("%w: pipeline %s checks %s subjects, not merge", errUsage, name, p.Subject)
		}
		return p, err
	}
	var merges []host.PipelineInfo
	for _, p := range all {
		if p.Subject == abi.SubjectMerge {
			merges = append(merges, p)
		}
	}
	if len(merges) != 1 {
		return host.PipelineInfo{}, fmt.Errorf("%w: --pipeline is required: %d merge pipelines configured", errUsage, len(merges))
	}
	return merges[0], nil
}

// strictJSON decodes a small operator file, refusing unknown members and
// trailing data.
func strictJSON(path string, v any) error {
	b, err := safefile.ReadFile(path, maxOperatorFileBytes)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if d.More() {
		return fmt.Errorf("%s: trailing data after the JSON value", path)
	}
	return nil
}

func readFootprint(path string) ([]abi.SymbolRef, error) {
	var fp []abi.SymbolRef
	if err := strictJSON(path, &fp); err != nil {
		return nil, fmt.Errorf("footprint: %w", err)
	}
	for i, r := range fp {
		if r.File == "" {
			return nil, fmt.Errorf("footprint %s: [%d].file: required", path, i)
		}
		if r.Symbol == "" {
			return nil, fmt.Errorf("footprint %s: [%d].symbol: required", path, i)
		}
	}
	return fp, nil
}

func readWaiver(path string) (*abi.Waiver, error) {
	var w abi.Waiver
	if err := strictJSON(path, &w); err != nil {
		return nil, fmt.Errorf("waiver: %w", err)
	}
	switch {
	case strings.TrimSpace(w.Reason) == "":
		return nil, fmt.Errorf("waiver %s: reason: required", path)
	case strings.TrimSpace(w.ApprovedBy) == "":
		return nil, fmt.Errorf("waiver %s: approved_by: required", path)
	case len(w.Scope) == 0:
		return nil, fmt.Errorf("waiver %s: scope: at least one path pattern is required", path)
	}
	for i, s := range w.Scope {
		if s == "" {
			return nil, fmt.Errorf("waiver %s: scope[%d]: empty pattern", path, i)
		}
	}
	return &w, nil
}

// printCheckTail shows the output tail of a failed build/test check.
func printCheckTail(w io.Writer, d *host.Decision) {
	for _, s := range d.Stages {
		checks, _ := s.Evidence["checks"].(map[string]any)
		bt, _ := checks["build_test"].(map[string]any)
		if tail, _ := bt["output_tail"].(string); tail != "" {
			fmt.Fprintf(w, "\n  %s: output of check %v (tail):\n", s.Name, bt["check"])
			for _, line := range strings.Split(strings.TrimRight(tail, "\n"), "\n") {
				fmt.Fprintln(w, "    "+line)
			}
		}
	}
}
