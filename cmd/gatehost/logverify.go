package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/runecut"
	"github.com/gatehost/gatehost/store"
)

const logVerifyUsage = `Usage: gatehost log verify [flags]

Verifies the event log's hash chain and its head checkpoint: the file
event_log.path names, the file --log names (with FILE.head beside it, as
gatehost log export writes it), or, with store.kind postgres, every chain
in the database (or the one --chain names).
Exit codes: 0 every chain holds, 1 a chain is broken, 2 a usage, config or
read error (the database unreachable, a file missing).
`

func cmdLogVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("log verify", logVerifyUsage, stderr, flagConfig|flagOutput)
	anchor := fs.String("anchor", "", "hash of a record known good from outside the log; the chain must contain it (with a PostgreSQL store, give --chain)")
	logFile := fs.String("log", "", "verify this log file and FILE.head instead of the configured event log; the config is not read")
	chain := fs.String("chain", "", "with a PostgreSQL store: verify only this chain (default every chain)")
	if code, done := fs.parse(args, exactly(0)); done {
		return code
	}
	if *logFile != "" {
		if *chain != "" || fs.config != "" {
			return fail(stderr, fmt.Errorf("%w: --log verifies a file: --chain and --config do not apply", errUsage))
		}
		return verifyLogFile(*logFile, *anchor, fs.output, stdout)
	}
	cfg, err := fs.load()
	if err != nil {
		return fail(stderr, err)
	}
	if cfg.Store.Postgres() {
		return verifyStoreChains(ctx, cfg, *chain, *anchor, fs.output, stdout, stderr)
	}
	if *chain != "" {
		return fail(stderr, fmt.Errorf("%w: --chain applies to store.kind %s", errUsage, config.StorePostgres))
	}
	if cfg.LogPath == "" {
		return fail(stderr, fmt.Errorf("config %s: event_log.path is not set", cfg.File))
	}
	return verifyLogFile(cfg.LogPath, *anchor, fs.output, stdout)
}

// verifyLogFile verifies a log file and prints the outcome.
func verifyLogFile(path, anchor, output string, stdout io.Writer) int {
	var aps approvalsSeen
	rep, verr := eventlog.Verify(path, eventlog.VerifyOptions{Anchor: anchor, Check: aps.check})
	if output == "json" {
		out := map[string]any{
			"path": path, "ok": verr == nil, "records": rep.Records,
			"last_seq": rep.LastSeq, "last_hash": rep.LastHash, "torn_tail_bytes": rep.TornBytes,
			"approvals": aps.list,
		}
		if verr != nil {
			out["error"] = verr.Error()
		}
		writeLogJSON(stdout, out)
	} else if verr == nil {
		fmt.Fprintf(stdout, "ok: %s: %d records, chain holds, last seq %d hash %s\n", path, rep.Records, rep.LastSeq, rep.LastHash)
		if rep.TornTail {
			fmt.Fprintf(stdout, "note: %d bytes after the last record are a torn write (a crash mid-append); they will be dropped when the log is next opened\n", rep.TornBytes)
		}
		aps.print(stdout)
	} else {
		fmt.Fprintf(stdout, "FAILED: %s: %v\n", path, verr)
	}
	return verifyExit(verr)
}

// verifyExit is log verify's exit code for a verification error: 1 for a
// broken chain, 2 when the log could not be read at all.
func verifyExit(err error) int {
	var ce *eventlog.ChainError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		return 1
	default:
		return exitUsage
	}
}

// chainJSON is one chain in log verify's JSON output.
type chainJSON struct {
	Chain     string      `json:"chain"`
	OK        bool        `json:"ok"`
	Records   uint64      `json:"records"`
	LastSeq   uint64      `json:"last_seq"`
	LastHash  string      `json:"last_hash"`
	HeadSeq   uint64      `json:"head_seq"`
	HeadHash  string      `json:"head_hash"`
	AnchorSeq uint64      `json:"anchor_seq,omitempty"`
	Gaps      []store.Gap `json:"gaps,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// verifyStoreChains verifies the chains of a PostgreSQL store.
func verifyStoreChains(ctx context.Context, cfg *config.Loaded, chain, anchor, output string, stdout, stderr io.Writer) int {
	opts := store.VerifyChainsOptions{}
	if chain != "" {
		opts.Chains = []string{chain}
	}
	if anchor != "" {
		if chain == "" {
			return fail(stderr, fmt.Errorf("%w: --anchor with a PostgreSQL store: name its chain with --chain", errUsage))
		}
		opts.Anchors = map[string]string{chain: anchor}
	}
	db, err := openLogStore(ctx, cfg, output, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer db.Close()
	reps, err := db.VerifyChains(ctx, opts)
	if err != nil {
		return fail(stderr, err)
	}
	ok := true
	chains := make([]chainJSON, 0, len(reps))
	for _, r := range reps {
		c := chainJSON{Chain: r.Chain, OK: r.Err == nil, Records: r.Records, LastSeq: r.LastSeq, LastHash: r.LastHash,
			HeadSeq: r.Head.Seq, HeadHash: r.Head.Hash, AnchorSeq: r.AnchorSeq, Gaps: r.Gaps}
		var ce *eventlog.ChainError
		if errors.As(r.Err, &ce) {
			c.Reason, c.Error = ce.Reason, ce.Error()
		}
		ok = ok && c.OK
		chains = append(chains, c)
	}
	if output == "json" {
		writeLogJSON(stdout, map[string]any{"store": config.StorePostgres, "ok": ok, "chains": chains})
	} else {
		if len(chains) == 0 {
			fmt.Fprintln(stdout, "ok: the store holds no event log chains yet")
		}
		for _, c := range chains {
			if c.OK {
				fmt.Fprintf(stdout, "ok: chain %s: %d records, chain holds, last seq %d hash %s, head seq %d\n", c.Chain, c.Records, c.LastSeq, c.LastHash, c.HeadSeq)
				continue
			}
			fmt.Fprintf(stdout, "FAILED: chain %s: %s (verified %d records up to seq %d; head seq %d)\n", c.Chain, c.Error, c.Records, c.LastSeq, c.HeadSeq)
			if len(c.Gaps) > 0 {
				gaps := make([]string, len(c.Gaps))
				for i, g := range c.Gaps {
					gaps[i] = fmt.Sprint(g.From)
					if g.To != g.From {
						gaps[i] += fmt.Sprintf("-%d", g.To)
					}
				}
				fmt.Fprintf(stdout, "  missing seqs: %s\n", strings.Join(gaps, ", "))
			}
		}
	}
	if !ok {
		return 1
	}
	return 0
}

// chainStore is a store whose event log chains can be read: PostgreSQL's.
type chainStore interface {
	store.Store
	store.ChainReader
}

// openLogStore opens the PostgreSQL store of cfg for reading only (a
// read-only role or a hot standby suffices), logging its warnings to
// stderr (as JSON with --output json).
func openLogStore(ctx context.Context, cfg *config.Loaded, output string, stderr io.Writer) (chainStore, error) {
	logger, err := newLogger(stderr, "warn", output == "json")
	if err != nil {
		return nil, err
	}
	st, err := compose.OpenStore(ctx, cfg, compose.StoreOptions{Logger: logger, Access: compose.ReadOnly})
	if err != nil {
		return nil, err
	}
	cs, ok := st.(chainStore)
	if !ok {
		_ = st.Close()
		return nil, fmt.Errorf("%w: config %s: store.kind %s keeps no event log chains; read the log file", errUsage, cfg.File, cfg.Store.Kind)
	}
	return cs, nil
}

// writeLogJSON writes v indented, as the commands' JSON output is.
func writeLogJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// approvalSeen is an approval decision on a verified chain: who approved
// or denied which call.
type approvalSeen struct {
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Reason   string    `json:"reason,omitempty"`
	Tool     string    `json:"tool"`
	Approver string    `json:"approver"`
	Request  string    `json:"request_id,omitempty"`
	Note     string    `json:"note,omitempty"`
}

// approvalsSeen collects, as log verify reads the chain, the records of a
// person's decision: approval_minted, and approval_refused by an approver
// (approval_denied). Only verified records reach it.
type approvalsSeen struct{ list []approvalSeen }

// maxApprovalsShown bounds what log verify prints of them (the last ones).
const maxApprovalsShown = 20

func (a *approvalsSeen) check(r *eventlog.Record) error {
	if r.Kind != approval.KindMinted && !(r.Kind == approval.KindRefused && r.Reason == approval.CodeDenied) {
		return nil
	}
	var d approval.Record
	if json.Unmarshal(r.Data, &d) != nil {
		return nil // a record's data is the writer's; the chain is what is verified
	}
	a.list = append(a.list, approvalSeen{Seq: r.Seq, Time: r.Time, Kind: r.Kind, Reason: r.Reason, Tool: d.Tool,
		Approver: cmp.Or(approval.PrincipalName(d.ApprovedBy), d.Approver, "(unnamed)"), Request: d.Request, Note: d.Note})
	if len(a.list) > maxApprovalsShown {
		a.list = a.list[1:]
	}
	return nil
}

func (a *approvalsSeen) print(w io.Writer) {
	if len(a.list) == 0 {
		return
	}
	fmt.Fprintf(w, "approvals decided by a person (last %d):\n", len(a.list))
	for _, s := range a.list {
		verb := "approved"
		if s.Kind == approval.KindRefused {
			verb = "denied"
		}
		fmt.Fprintf(w, "  seq %d %s %s %s by %s", s.Seq, s.Time.UTC().Format(time.RFC3339), s.Tool, verb, s.Approver)
		if s.Request != "" {
			fmt.Fprintf(w, " (request %s)", s.Request)
		}
		if s.Note != "" {
			fmt.Fprintf(w, " note %q", runecut.Cut(s.Note, 80, "..."))
		}
		fmt.Fprintln(w)
	}
}
