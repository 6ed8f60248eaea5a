package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gatehost/gatehost/host/eventlog"
)

func cmdLogVerify(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("log verify", "Usage: gatehost log verify [flags]\n", stderr, flagConfig|flagOutput)
	anchor := fs.String("anchor", "", "hash of a record known good from outside the log; the chain must contain it")
	if code, done := fs.parse(args, exactly(0)); done {
		return code
	}
	cfg, err := fs.load()
	if err != nil {
		return fail(stderr, err)
	}
	if cfg.LogPath == "" {
		return fail(stderr, fmt.Errorf("config %s: event_log.path is not set", cfg.File))
	}
	rep, verr := eventlog.Verify(cfg.LogPath, eventlog.VerifyOptions{Anchor: *anchor})
	if fs.output == "json" {
		out := map[string]any{
			"path": cfg.LogPath, "ok": verr == nil, "records": rep.Records,
			"last_seq": rep.LastSeq, "last_hash": rep.LastHash, "torn_tail_bytes": rep.TornBytes,
		}
		if verr != nil {
			out["error"] = verr.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	} else if verr == nil {
		fmt.Fprintf(stdout, "ok: %s: %d records, chain holds, last seq %d hash %s\n", cfg.LogPath, rep.Records, rep.LastSeq, rep.LastHash)
		if rep.TornTail {
			fmt.Fprintf(stdout, "note: %d bytes after the last record are a torn write (a crash mid-append); they will be dropped when the log is next opened\n", rep.TornBytes)
		}
	} else {
		fmt.Fprintf(stdout, "FAILED: %s: %v\n", cfg.LogPath, verr)
	}
	if verr != nil {
		var ce *eventlog.ChainError
		if !errors.As(verr, &ce) {
			return exitUsage // the log could not be read at all
		}
		return 1
	}
	return 0
}
