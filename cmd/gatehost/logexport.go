package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/store"
	"github.com/gatehost/gatehost/store/postgres"
)

const logExportUsage = `Usage: gatehost log export --out FILE [flags]

Writes one event log chain of a PostgreSQL store (store.kind postgres) as a
log file, FILE, with its head checkpoint beside it, FILE.head: the same
lines a file event log holds, so 'gatehost log verify --log FILE' checks it
anywhere, without the database. FILE must not exist. The export is checked
once written.
Exit codes: 0 exported and the chain holds, 1 exported but the chain is
broken (the file is kept, for inspection), 2 a usage, config or database
error.
`

func cmdLogExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("log export", logExportUsage, stderr, flagConfig|flagOutput)
	chain := fs.String("chain", "", "chain to export (default this replica's: store.node_id, or global with store.chain global)")
	out := fs.String("out", "", "file to write; FILE.head is written beside it (required)")
	if code, done := fs.parse(args, exactly(0)); done {
		return code
	}
	if *out == "" {
		return fail(stderr, fmt.Errorf("%w: --out is required", errUsage))
	}
	cfg, err := fs.load()
	if err != nil {
		return fail(stderr, err)
	}
	if !cfg.Store.Postgres() {
		return fail(stderr, fmt.Errorf("%w: log export reads a PostgreSQL store (store.kind %s); a file event log is a log file already", errUsage, config.StorePostgres))
	}
	name := *chain
	if name == "" {
		name = cfg.Store.NodeID
		if cfg.Store.Chain == config.ChainGlobal {
			name = postgres.GlobalChain
		}
	}
	db, err := openLogStore(ctx, cfg, fs.output, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer db.Close()
	head, err := exportChain(ctx, db, name, *out)
	if err != nil {
		return fail(stderr, err)
	}

	rep, verr := eventlog.Verify(*out)
	if fs.output == "json" {
		res := map[string]any{"chain": name, "out": *out, "head_seq": head.Seq, "head_hash": head.Hash,
			"records": rep.Records, "last_seq": rep.LastSeq, "last_hash": rep.LastHash, "ok": verr == nil}
		var ce *eventlog.ChainError
		if errors.As(verr, &ce) {
			res["reason"] = ce.Reason
		}
		if verr != nil {
			res["error"] = verr.Error()
		}
		writeLogJSON(stdout, res)
	} else if verr == nil {
		fmt.Fprintf(stdout, "exported chain %s: %d records to %s, chain holds, head seq %d hash %s\n", name, rep.Records, *out, head.Seq, head.Hash)
	} else {
		fmt.Fprintf(stdout, "FAILED: exported chain %s to %s, but it does not verify: %v\n", name, *out, verr)
	}
	return verifyExit(verr)
}

// exportChain writes chain to a new file at path and its head to
// path.head; a failed export leaves no file behind.
func exportChain(ctx context.Context, db store.ChainReader, chain, path string) (head eventlog.Head, err error) {
	f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return eventlog.Head{}, fmt.Errorf("--out: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(path)
			_ = os.Remove(eventlog.HeadPath(path))
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	head, err = db.ExportChain(ctx, chain, w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = eventlog.WriteHead(path, head)
	}
	if err != nil {
		return eventlog.Head{}, fmt.Errorf("export chain %s to %s: %w", chain, path, err)
	}
	return head, nil
}
