package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/server"
	"github.com/gatehost/gatehost/store"
	"github.com/gatehost/gatehost/store/postgres"
)

const sessionUsage = `Usage: gatehost session SUBCOMMAND [flags] [TOOL...]

  create   --session ID [TOOL...]  create a session whose core pins the tools
  activate --session ID TOOL...    grant the tools to the session, all or nothing
  revoke   --session ID TOOL...    revoke the tools' grants
  rebuild  --session ID            re-pin against the current catalog; drop removed or drifted tools
  show     [--session ID]          list a session's pins and grants with their status, or every session

A pin or grant has drifted when the tool's schema, provenance or policy
digest (schema, hints, effect, provenance, source) differs from what was
pinned, or when it was pinned before policy digests were recorded; the exec
gate then denies the tool until it is activated again.

TOOL is a catalog id, wire name or alias, matched exactly. Sessions live in
the file named by sessions.path in the config or, with store.kind postgres,
in the PostgreSQL store that the replicas of a fleet share (store.dsn or
$GATEHOST_STORE_DSN).
`

func cmdSession(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub, code, done := subcommand(args, sessionUsage, stdout, stderr)
	if done {
		return code
	}
	fs := newFlags("session "+sub, sessionUsage, stderr, flagConfig|flagOutput|flagSession)
	fs.setUsage("session", "session id")
	if code, done := fs.parse(args[1:], func(int) bool { return true }); done {
		return code
	}
	id := &fs.session
	tools := fs.Args()
	switch sub {
	case "create", "activate", "revoke", "rebuild":
		if *id == "" {
			return fail(stderr, fmt.Errorf("%w: session %s: --session is required", errUsage, sub))
		}
		if (sub == "activate" || sub == "revoke") && len(tools) == 0 {
			return fail(stderr, fmt.Errorf("%w: session %s: name at least one tool", errUsage, sub))
		}
		if sub == "rebuild" && len(tools) > 0 {
			return fail(stderr, fmt.Errorf("%w: session rebuild takes no tools", errUsage))
		}
	case "show":
		if len(tools) > 0 {
			return fail(stderr, fmt.Errorf("%w: session show takes no tools", errUsage))
		}
	default:
		fmt.Fprintf(stderr, "gatehost session: unknown subcommand %q\n\n%s", sub, sessionUsage)
		return exitUsage
	}
	cfg, err := fs.load()
	if err != nil {
		return fail(stderr, err)
	}
	st := cfg.Host.Sessions
	var shared store.Store // the PostgreSQL store, if the config names one
	switch {
	case cfg.Store.Postgres():
		logger, err := newLogger(stderr, "warn", fs.output == "json")
		if err != nil {
			return fail(stderr, err)
		}
		access := compose.State
		if sub == "show" {
			// Reading only: a read-only role or a hot standby suffices.
			access = compose.ReadOnly
		}
		shared, err = compose.OpenStore(ctx, cfg, compose.StoreOptions{Logger: logger, Access: access})
		if errors.Is(err, postgres.ErrConfig) {
			return fail(stderr, fmt.Errorf("config %s: %w", cfg.File, err))
		}
		if err != nil {
			// Unreachable, or a schema this build does not know: not how
			// the command was called.
			fmt.Fprintf(stderr, "gatehost: config %s: %v\n", cfg.File, err)
			return 1
		}
		defer shared.Close()
		st = shared.Sessions()
	case cfg.SessionPath == "":
		return fail(stderr, fmt.Errorf("config %s: sessions.path: required by gatehost session (sessions would not outlive the command)", cfg.File))
	}
	snap := cfg.Host.Catalog.Snapshot()
	if shared != nil {
		// Pin and show against the catalog the replicas decide against:
		// with store.catalog: published, the store's, not catalog.sources.
		tools, _, err := compose.CatalogTools(ctx, cfg, shared)
		if err != nil {
			fmt.Fprintln(stderr, "gatehost:", err)
			return 1
		}
		cat, err := catalog.NewStore(tools...)
		if err != nil {
			return fail(stderr, fmt.Errorf("config %s: catalog: %w", cfg.File, err))
		}
		snap = cat.Snapshot()
	}

	var set *session.Set
	var report *session.Report
	switch sub {
	case "create":
		set, err = session.Create(ctx, st, snap, *id, tools...)
	case "activate":
		set, err = session.ActivateMany(ctx, st, snap, *id, tools)
	case "revoke":
		for _, t := range tools {
			if set, err = session.Revoke(ctx, st, snap, *id, t); err != nil {
				break
			}
		}
	case "rebuild":
		var r session.Report
		set, r, err = session.Rebuild(ctx, st, snap, *id)
		report = &r
	case "show":
		if *id == "" {
			return showSessions(ctx, st, snap, fs.output, stdout, stderr)
		}
		if set, err = st.Load(ctx, *id); err == nil && set == nil {
			err = fmt.Errorf("session %q: %w", *id, session.ErrUnknownSession)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "gatehost:", err)
		return 1
	}
	if fs.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		v := any(sessionView(set, snap))
		if report != nil {
			v = struct {
				Session any             `json:"session"`
				Report  *session.Report `json:"report"`
			}{v, report}
		}
		if err := enc.Encode(v); err != nil {
			return fail(stderr, err)
		}
		return 0
	}
	if report != nil {
		fmt.Fprintf(stdout, "rebuilt against catalog generation %d: %d kept, %d dropped\n", report.Generation, len(report.Kept), len(report.Dropped))
		for _, d := range report.Dropped {
			fmt.Fprintf(stdout, "  dropped %s (%s)\n", d.Tool, statusText(d.Reason, d.Drift))
		}
	}
	printSession(stdout, sessionView(set, snap))
	return 0
}

// setView is a session's pins and grants with their status against the
// current catalog, in the shape GET /v1/sessions/{id} answers.
type setView = server.SessionView

func sessionView(s *session.Set, snap *catalog.Snapshot) setView { return server.ViewSession(s, snap) }

// statusText is a status with what drifted, for tables: "drifted:
// policy_digest", "removed", "ok". A pin made before policy digests says
// so, since granting the tool again is the fix.
func statusText(status string, drift []string) string {
	if len(drift) == 0 {
		return status
	}
	return status + ": " + strings.Join(drift, ",")
}

func printSession(w io.Writer, v setView) {
	fmt.Fprintf(w, "session %s  version=%d  catalog_generation=%d  tools=%d\n", v.Session, v.Version, v.Catalog, len(v.Tools))
	if len(v.Tools) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOOL\tBASIS\tGRANTED_AT\tDIGEST\tPOLICY\tPROVENANCE\tSTATUS")
	for _, t := range v.Tools {
		gen := "-"
		if t.CatalogGeneration != nil {
			gen = fmt.Sprint(*t.CatalogGeneration)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Tool, t.Basis, gen, short(t.SchemaDigest), dash(short(t.PolicyDigest)), t.Provenance, statusText(t.Status, t.Drift))
	}
	tw.Flush()
}

func showSessions(ctx context.Context, st session.Store, snap *catalog.Snapshot, output string, stdout, stderr io.Writer) int {
	ids, err := st.IDs(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "gatehost:", err)
		return 1
	}
	views := []setView{}
	for _, id := range ids {
		s, err := st.Load(ctx, id)
		if err != nil {
			fmt.Fprintln(stderr, "gatehost:", err)
			return 1
		}
		if s != nil {
			views = append(views, sessionView(s, snap))
		}
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(views); err != nil {
			return fail(stderr, err)
		}
		return 0
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no sessions")
	}
	for _, v := range views {
		printSession(stdout, v)
	}
	return 0
}

// short abbreviates a digest for tables; JSON output has it whole.
func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
