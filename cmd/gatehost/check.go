package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/internal/oneline"
)

const (
	abiMajor = abi.MajorVersion
	abiMinor = abi.MinorVersion
)

func cmdCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("check", "Usage: gatehost check [flags] SUBJECT|-\n", stderr,
		flagConfig|flagPipeline|flagOutput|flagFormat|flagSession|flagRequestID|flagLogLevel)
	pipelineName, output, format, session, requestID := &fs.pipeline, &fs.output, &fs.format, &fs.session, &fs.requestID
	confirm := fs.String("confirm", "", "a person's confirmation token for the tool call being checked (tool_call pipelines)")
	nowFlag := fs.String("now", "", "run clock as of this RFC 3339 time, for replaying a check (default: now)")
	if code, done := fs.parse(args, exactly(1)); done {
		return code
	}
	var now time.Time
	if *nowFlag != "" {
		t, err := time.Parse(time.RFC3339Nano, *nowFlag)
		if err != nil {
			return fail(stderr, fmt.Errorf("%w: --now %q: %w", errUsage, *nowFlag, err))
		}
		now = t
	}
	logger, cfg, err := fs.setup()
	if err != nil {
		return fail(stderr, err)
	}
	data, err := readSubject(ctx, fs.Arg(0), stdin, cmp.Or(cfg.Host.MaxSubjectBytes, host.MaxSubjectBytes))
	if err != nil {
		return fail(stderr, err)
	}
	*pipelineName = pipelineFlag(*pipelineName)
	onlyPipeline(&cfg.Host, *pipelineName)
	defer cfg.Close()
	h, closeAll, err := openHost(ctx, cfg, logger)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeAll()

	info, err := pickPipeline(h.Pipelines(), *pipelineName)
	if err != nil {
		return fail(stderr, fmt.Errorf("config %s: %w", cfg.File, err))
	}
	d, err := h.Check(ctx, info.Name, data, host.RunOptions{Format: subject.Format(*format), Session: *session,
		RequestID: *requestID, ConfirmationToken: *confirm, Now: now})
	if d == nil {
		return fail(stderr, checkError(fs.Arg(0), err))
	}
	// The exit code is the verdict, decided and recorded by now: a reader
	// that stops early (| head -1) closes the pipe, and the write's EPIPE
	// must not turn the verdict into a failure (main ignores SIGPIPE).
	var buf bytes.Buffer
	if *output == "json" {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if e := enc.Encode(d); e != nil {
			return fail(stderr, e)
		}
	} else {
		printDecision(&buf, d)
	}
	if _, e := stdout.Write(buf.Bytes()); e != nil && !errors.Is(e, syscall.EPIPE) {
		return fail(stderr, e)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gatehost:", err)
	}
	return verdictExit(d.Verdict)
}

// verdictExit is the exit code of a decided run, the verdict's (docs/CLI.md's
// exit-code table); anything but accepted or rejected is inconclusive.
func verdictExit(v abi.Verdict) int {
	switch v {
	case abi.Accepted:
		return exitAccepted
	case abi.Rejected:
		return exitRejected
	}
	return exitInconclusive
}

// checkError is the message of an error Check returned without a
// decision: a refused subject names the file and fits one line; options
// that do not apply to the pipeline are the flags' fault.
func checkError(arg string, err error) error {
	var (
		oe    *host.OptionError
		other *host.SubjectError
		agent *subject.Error
	)
	switch {
	case errors.As(err, &other) && other.Looks != "":
		return fmt.Errorf("subject %s: %s", arg, other.Reason)
	case errors.As(err, &agent): // host/subject's message names the format and the place
		return fmt.Errorf("subject %s: %s", arg, oneline.Of(agent.Error()))
	case errors.Is(err, host.ErrBadSubject):
		return fmt.Errorf("subject %s: %s", arg, oneline.Of(err.Error()))
	case errors.As(err, &oe):
		flag := map[string]string{"Format": "--format", "ConfirmationToken": "--confirm"}[oe.Field]
		if flag == "" {
			return err
		}
		return fmt.Errorf("%w: %s: %s", errUsage, flag, oe.Reason)
	}
	return err
}

// readSubject reads the subject from the file arg, or stdin for "-", up to
// maxBytes. A pipe is a valid subject (gatehost check <(…)), so a named pipe
// is waited on as stdin is; the wait ends when ctx does (SIGINT, SIGTERM),
// leaving the blocked read behind for the exiting process.
func readSubject(ctx context.Context, arg string, stdin io.Reader, maxBytes int) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readSubjectFrom(arg, stdin, maxBytes)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("subject %s: %w", arg, context.Cause(ctx))
	}
}

func readSubjectFrom(arg string, stdin io.Reader, maxBytes int) ([]byte, error) {
	var r io.Reader = stdin
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			return nil, fmt.Errorf("subject: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("subject %s: %w", arg, err)
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("subject %s: larger than max_subject_bytes (%d bytes)", arg, maxBytes)
	}
	return b, nil
}

func pickPipeline(all []host.PipelineInfo, name string) (host.PipelineInfo, error) {
	if name == "" {
		if len(all) == 1 {
			return all[0], nil
		}
		names := make([]string, len(all))
		for i, p := range all {
			names[i] = p.Name
		}
		return host.PipelineInfo{}, fmt.Errorf("%w: --pipeline is required: %d pipelines configured (%s)", errUsage, len(all), strings.Join(names, ", "))
	}
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name
	}
	return host.PipelineInfo{}, fmt.Errorf("%w: --pipeline %s: no such pipeline (pipelines: %s)", errUsage, name, strings.Join(names, ", "))
}

func printDecision(w io.Writer, d *host.Decision) {
	fmt.Fprintf(w, "%s  pipeline=%s  run=%s  catalog_generation=%d\n",
		strings.ToUpper(string(d.Verdict)), d.Pipeline, d.RunID, d.CatalogGeneration)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STAGE\tPLUGIN\tMODE\tVERDICT\tREASON\tTIME")
	for _, s := range d.Stages {
		verdict := string(s.Verdict)
		if s.Skipped {
			verdict = "skipped"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.1fms\n", s.Name, s.Plugin, s.Mode, verdict, dash(s.Reason), float64(s.DurationMicros)/1000)
	}
	tw.Flush()
	// Why a stage could not tell: the host's or the gate's error, first
	// line only (--output json has all of it).
	for _, s := range d.Stages {
		if s.Verdict != abi.Inconclusive || s.Skipped {
			continue
		}
		if e, ok := s.Evidence["error"].(string); ok && e != "" {
			e, _, _ = strings.Cut(e, "\n")
			fmt.Fprintf(w, "  %s: %s: %s\n", s.Name, dash(s.Reason), e)
		}
	}
	if len(d.Findings) == 0 {
		fmt.Fprintln(w, "  no findings")
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SEVERITY\tCODE\tSTAGE\tACTION\tPATH\tMESSAGE")
	for _, f := range d.Findings {
		action := "-"
		if f.ActionIndex != nil {
			action = fmt.Sprintf("#%d", *f.ActionIndex)
			if f.ActionID != "" {
				action += " " + f.ActionID
			}
		}
		msg := f.Message
		if id, ok := f.Details["precondition"].(string); ok {
			msg = "[" + id + "] " + msg
		}
		if f.Suggestion != "" && !strings.Contains(msg, f.Suggestion) {
			msg += fmt.Sprintf(" (did you mean %q?)", f.Suggestion)
		}
		path := "-"
		if f.Path != "" || f.Keyword != "" {
			path = cmp.Or(f.Path, "(root)")
		}
		severity, stage := string(f.Severity), cmp.Or(f.Stage, "(host)")
		if f.Advisory {
			// It did not decide: never print a bare "blocking" under an
			// ACCEPTED line.
			severity += " (advisory)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", severity, f.Code, stage, action, path, msg)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
