package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// sessCatalog is the exec fixture catalog host/session's own tests use.
func sessCatalog(t *testing.T) *catalog.Store {
	t.Helper()
	tools, err := catalog.Load("../../testdata/exec/catalog.json", catalog.ImportOptions{Format: catalog.FormatNative})
	require.NoError(t, err)
	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return s
}

// sessReplica opens one more store on dsn, as another replica would.
func sessReplica(t *testing.T, dsn, node string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, NodeID: node})
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}

func sessCode(err error) string {
	var e *session.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// requireStoreFailure: err is a session store failure; unavailable says
// whether it is the database's (ErrUnavailable) rather than the data's.
func requireStoreFailure(t *testing.T, err error, unavailable bool, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, session.ErrStore, msgAndArgs...)
	assert.Equal(t, "store_failure", sessCode(err), msgAndArgs...)
	if unavailable {
		assert.ErrorIs(t, err, postgres.ErrUnavailable, msgAndArgs...)
	} else {
		assert.NotErrorIs(t, err, postgres.ErrUnavailable, msgAndArgs...)
	}
}

// revocations lists the revocation history of sess as "tool@version/node".
func revocations(t *testing.T, db *postgres.DB, sess string) []string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(),
		"SELECT tool || '@' || version::text || '/' || node FROM gatehost_session_revocations WHERE session = $1 ORDER BY seq", sess)
	require.NoError(t, err)
	out := []string{}
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestSessionStoreOperations runs host/session's behavioural table
// (TestOperations there, on MemStore and FileStore) on the PostgreSQL
// store, and checks what it leaves in the tables.
func TestSessionStoreOperations(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, "node-a")
	st := db.Sessions()
	cat := sessCatalog(t)
	snap := cat.Snapshot()

	set, err := session.Create(ctx, st, snap, "s1", "read_file")
	require.NoError(t, err)
	assert.Equal(t, uint64(0), set.Version)
	assert.Contains(t, set.Core, "builtin:read_file")

	_, err = session.Create(ctx, st, snap, "s1")
	assert.ErrorIs(t, err, session.ErrSessionExists)
	assert.Equal(t, "session_exists", sessCode(err))

	set, err = session.ActivateMany(ctx, st, snap, "s1", []string{"files_write", "echo"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), set.Version)
	w, _ := snap.Get("mcp.files:write")
	want := session.Grant{Session: "s1", Tool: "mcp.files:write", CatalogGeneration: 0, CatalogDigest: snap.Digest(),
		SchemaDigest: w.SchemaDigest, PolicyDigest: w.PolicyDigest}
	assert.Equal(t, want, set.Activated["mcp.files:write"].Grant)
	assert.Len(t, want.PolicyDigest, 64)
	loaded, err := st.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, set, loaded, "what Update returned is what Load reads")

	for _, tc := range []struct {
		names []string
		want  error
		code  string
	}{
		{[]string{"files_read", "Files_Read"}, session.ErrUnknownTool, "unknown_tool"},
		{[]string{"files_read", "stray"}, session.ErrUntrustedSource, "untrusted_source"},
		{[]string{"files_read", "mcp.files:read"}, session.ErrDuplicateTool, "duplicate_tool"},
		{[]string{"files_read", "echo"}, session.ErrAlreadyActive, "already_active"},
		{[]string{"read_file"}, session.ErrAlreadyActive, "already_active"},
	} {
		t.Run(fmt.Sprint(tc.names), func(t *testing.T) {
			_, err := session.ActivateMany(ctx, st, snap, "s1", tc.names)
			assert.ErrorIs(t, err, tc.want)
			assert.NotErrorIs(t, err, postgres.ErrUnavailable, "a refusal is the caller's, not the database's")
			assert.Equal(t, tc.code, sessCode(err))
			cur, err := st.Load(ctx, "s1")
			require.NoError(t, err)
			assert.Equal(t, uint64(1), cur.Version, "a failed activate_many changes nothing")
			assert.NotContains(t, cur.Activated, "mcp.files:read")
		})
	}
	ok, _ := db.Healthy()
	assert.True(t, ok, "refusals leave the database healthy")

	_, err = session.Revoke(ctx, st, snap, "s1", "files_read")
	assert.ErrorIs(t, err, session.ErrNotActivated)
	_, err = session.Revoke(ctx, st, snap, "s1", "read_file")
	assert.ErrorIs(t, err, session.ErrCoreTool)
	_, err = session.Revoke(ctx, st, snap, "nobody", "files_read")
	assert.ErrorIs(t, err, session.ErrUnknownSession)
	set, err = session.Revoke(ctx, st, nil, "s1", "ext.srv:echo_tool")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), set.Version)
	assert.NotContains(t, set.Activated, "ext.srv:echo_tool")
	assert.Equal(t, []string{"ext.srv:echo_tool@2/node-a"}, revocations(t, db, "s1"))

	_, err = session.Activate(ctx, st, snap, "bad id", "files_read")
	assert.ErrorIs(t, err, session.ErrInvalidSession)

	// Rebuild after a catalog change drops a removed and a drifted grant;
	// both removals are in the revocation history.
	_, err = session.Activate(ctx, st, snap, "s1", "files_read")
	require.NoError(t, err)
	next, err := cat.Update(func(b *catalog.Builder) error {
		if err := b.Remove("mcp.files:read"); err != nil {
			return err
		}
		w, _ := b.Get("files_write")
		w.InputSchema, w.SchemaDigest = json.RawMessage(`{"type":"object"}`), ""
		return b.Replace(w)
	})
	require.NoError(t, err)
	set, rep, err := session.Rebuild(ctx, st, next, "s1")
	require.NoError(t, err)
	assert.Equal(t, []string{"builtin:read_file"}, rep.Kept)
	assert.Equal(t, []session.Dropped{
		{Tool: "mcp.files:read", Reason: session.DropRemoved},
		{Tool: "mcp.files:write", Reason: session.DropDrifted, Drift: []string{session.DriftSchema, session.DriftPolicy}},
	}, rep.Dropped)
	assert.Empty(t, set.Activated)
	assert.Equal(t, uint64(4), set.Version)
	assert.Equal(t, []string{"ext.srv:echo_tool@2/node-a", "mcp.files:read@4/node-a", "mcp.files:write@4/node-a"}, revocations(t, db, "s1"))
	loaded, err = st.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, set, loaded)

	// A grant carried forward by a rebuild records the new generation.
	_, err = session.Activate(ctx, st, next, "s2", "echo")
	require.NoError(t, err)
	later, err := cat.Update(func(b *catalog.Builder) error { return b.Remove("mcp.files:write") })
	require.NoError(t, err)
	require.Greater(t, later.Generation(), next.Generation())
	set, _, err = session.Rebuild(ctx, st, later, "s2")
	require.NoError(t, err)
	assert.Equal(t, later.Generation(), set.Activated["ext.srv:echo_tool"].Grant.CatalogGeneration)
	loaded, err = st.Load(ctx, "s2")
	require.NoError(t, err)
	assert.Equal(t, set, loaded)

	ids, err := st.IDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"s1", "s2"}, ids)
	absent, err := st.Load(ctx, "nobody")
	require.NoError(t, err)
	assert.Nil(t, absent, "a session not held is nil, no error")
}

// TestSessionRevokeSeenByOtherReplica: a revocation committed through one
// replica's store is what another replica's very next Load reads — there
// is no cache to go stale.
func TestSessionRevokeSeenByOtherReplica(t *testing.T) {
	ctx := context.Background()
	dbA, dsn := openDB(t, "node-a")
	dbB := sessReplica(t, dsn, "node-b")
	a, b := dbA.Sessions(), dbB.Sessions()
	snap := sessCatalog(t).Snapshot()

	_, err := session.ActivateMany(ctx, a, snap, "agent", []string{"files_read", "echo"})
	require.NoError(t, err)
	seen, err := b.Load(ctx, "agent")
	require.NoError(t, err)
	require.Contains(t, seen.Activated, "mcp.files:read", "B reads what A granted")

	_, err = session.Revoke(ctx, a, snap, "agent", "files_read")
	require.NoError(t, err)
	seen, err = b.Load(ctx, "agent")
	require.NoError(t, err)
	assert.NotContains(t, seen.Activated, "mcp.files:read", "B's next Load sees A's revocation")
	assert.Contains(t, seen.Activated, "ext.srv:echo_tool")
	assert.Equal(t, uint64(2), seen.Version)
	assert.Equal(t, []string{"mcp.files:read@2/node-a"}, revocations(t, dbB, "agent"))

	// And the other way round.
	_, err = session.Revoke(ctx, b, snap, "agent", "echo")
	require.NoError(t, err)
	seen, err = a.Load(ctx, "agent")
	require.NoError(t, err)
	assert.Empty(t, seen.Activated)
	assert.Equal(t, []string{"mcp.files:read@2/node-a", "ext.srv:echo_tool@3/node-b"}, revocations(t, dbA, "agent"))
}

// githubToolIDs returns n distinct tools of the GitHub MCP catalog's
// snapshot, for activations that do not collide.
func githubToolIDs(t *testing.T, n int) (*catalog.Snapshot, []string) {
	t.Helper()
	snap := snapshotOf(t, githubTools(t)...)
	list := snap.List()
	require.GreaterOrEqual(t, len(list), n)
	names := make([]string, n)
	for i := range names {
		names[i] = list[i].ID
	}
	return snap, names
}

// acrossReplicas runs op n times at once, alternating between two
// replicas' stores of one new database, each time with its own tool of the
// GitHub catalog; it returns the stores, the tools and op's errors.
func acrossReplicas(t *testing.T, n int, op func(st session.Store, snap *catalog.Snapshot, tool string) error) ([]session.Store, []string, []error) {
	t.Helper()
	dbA, dsn := openDB(t, "node-a")
	dbB := sessReplica(t, dsn, "node-b")
	stores := []session.Store{dbA.Sessions(), dbB.Sessions()}
	snap, tools := githubToolIDs(t, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, tool := range tools {
		wg.Go(func() { errs[i] = op(stores[i%2], snap, tool) })
	}
	wg.Wait()
	return stores, tools, errs
}

// TestSessionConcurrentActivationsAcrossReplicas: N activations of
// different tools on one session, from two replicas at once, none lost.
func TestSessionConcurrentActivationsAcrossReplicas(t *testing.T) {
	const n = 16
	ctx := context.Background()
	stores, tools, errs := acrossReplicas(t, n, func(st session.Store, snap *catalog.Snapshot, tool string) error {
		_, err := session.ActivateMany(ctx, st, snap, "shared", []string{tool})
		return err
	})
	for i, err := range errs {
		require.NoError(t, err, "activation %d", i)
	}
	for _, st := range stores {
		set, err := st.Load(ctx, "shared")
		require.NoError(t, err)
		assert.Len(t, set.Activated, n, "no activation lost")
		assert.Equal(t, uint64(n), set.Version, "one bump per activation")
		for _, tool := range tools {
			assert.Contains(t, set.Activated, tool)
		}
	}
}

// TestSessionCreateRace: replicas creating one session at once — exactly
// one wins, every other sees ErrSessionExists.
func TestSessionCreateRace(t *testing.T) {
	ctx := context.Background()
	stores, tools, errs := acrossReplicas(t, 8, func(st session.Store, snap *catalog.Snapshot, tool string) error {
		_, err := session.Create(ctx, st, snap, "race", tool)
		return err
	})
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two creators won: %d and %d", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, err, session.ErrSessionExists, "creator %d", i)
	}
	require.NotEqual(t, -1, winner, "nobody won")
	set, err := stores[1].Load(ctx, "race")
	require.NoError(t, err)
	assert.Equal(t, map[string]session.Pin{tools[winner]: set.Core[tools[winner]]}, set.Core, "the winner's core, only")
	assert.Equal(t, uint64(0), set.Version)
}

// TestSessionStoreOutage: with the database down, every operation is a
// store failure wrapping ErrUnavailable — never an absent session — and
// the store works again once the database is back.
func TestSessionStoreOutage(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Start(t)
	db, err := postgres.Open(ctx, postgres.Options{DSN: c.NewDatabase(t), NodeID: "node-a", OpTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer db.Close()
	st := db.Sessions()
	snap := sessCatalog(t).Snapshot()
	_, err = session.Activate(ctx, st, snap, "s", "files_read")
	require.NoError(t, err)

	require.NoError(t, c.Stop())
	ops := map[string]func() error{
		"load":     func() error { _, err := st.Load(ctx, "s"); return err },
		"ids":      func() error { _, err := st.IDs(ctx); return err },
		"activate": func() error { _, err := session.Activate(ctx, st, snap, "s", "echo"); return err },
		"revoke":   func() error { _, err := session.Revoke(ctx, st, snap, "s", "files_read"); return err },
		"create":   func() error { _, err := session.Create(ctx, st, snap, "new"); return err },
	}
	for name, op := range ops {
		requireStoreFailure(t, op(), true, name)
	}
	ok, last := db.Healthy()
	assert.False(t, ok)
	assert.ErrorIs(t, last, postgres.ErrUnavailable)

	require.NoError(t, c.Start())
	// pgxpool reconnects on demand; a connection the restart cut may fail
	// one more operation. The deadline only guards against a hang.
	deadline := time.Now().Add(time.Minute)
	for {
		set, err := st.Load(ctx, "s")
		if err == nil {
			require.Contains(t, set.Activated, "mcp.files:read", "the grant outlived the outage")
			break
		}
		requireStoreFailure(t, err, true)
		require.True(t, time.Now().Before(deadline), "the store did not recover: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	_, err = session.Activate(ctx, st, snap, "s", "echo")
	require.NoError(t, err)
	ok, _ = db.Healthy()
	assert.True(t, ok)
}

// TestSessionCorruptRows: rows that are no valid session — written by hand,
// or by something that bypassed the schema's checks — are a store failure
// for Load, Update and IDs, never an empty or partial answer, and Update
// never overwrites them.
func TestSessionCorruptRows(t *testing.T) {
	ctx := context.Background()
	snap := sessCatalog(t).Snapshot()
	for _, tc := range []struct {
		name    string
		corrupt string
		id      string // the session read back
		ids     bool   // IDs refuses too
	}{
		{"version past uint64", "UPDATE gatehost_sessions SET version = 99999999999999999999 WHERE id = 's'", "s", false},
		{"negative version", "UPDATE gatehost_sessions SET version = -1 WHERE id = 's'", "s", false},
		{"grant without generation", "UPDATE gatehost_session_tools SET catalog_generation = NULL WHERE session = 's' AND NOT core", "s", false},
		{"core pin with generation", "UPDATE gatehost_session_tools SET catalog_generation = 3 WHERE session = 's' AND core", "s", false},
		{"empty tool id", "UPDATE gatehost_session_tools SET tool = '' WHERE session = 's' AND NOT core", "s", false},
		{"generation past uint64", "UPDATE gatehost_session_tools SET catalog_generation = 99999999999999999999 WHERE session = 's' AND NOT core", "s", false},
		{"invalid session id", "UPDATE gatehost_sessions SET id = 'bad id' WHERE id = 's'", "bad id", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openDB(t, "node-a")
			st := db.Sessions()
			_, err := session.Create(ctx, st, snap, "s", "read_file")
			require.NoError(t, err)
			_, err = session.Activate(ctx, st, snap, "s", "files_read")
			require.NoError(t, err)
			// The schema refuses each of these; drop its checks to
			// plant them, as a hand edit with the checks gone would.
			for _, ddl := range []string{
				"ALTER TABLE gatehost_session_tools DROP CONSTRAINT gatehost_session_tools_session_fkey",
				"ALTER TABLE gatehost_sessions DROP CONSTRAINT gatehost_sessions_id_valid",
				"ALTER TABLE gatehost_sessions DROP CONSTRAINT gatehost_sessions_version_range",
				"ALTER TABLE gatehost_session_tools DROP CONSTRAINT gatehost_session_tools_tool_valid",
				"ALTER TABLE gatehost_session_tools DROP CONSTRAINT gatehost_session_tools_generation_range",
				"ALTER TABLE gatehost_session_tools DROP CONSTRAINT gatehost_session_tools_generation_iff_grant",
			} {
				_, err := db.Pool().Exec(ctx, ddl)
				require.NoError(t, err, ddl)
			}
			if tc.id != "s" {
				_, err = db.Pool().Exec(ctx, "UPDATE gatehost_session_tools SET session = $1 WHERE session = 's'", tc.id)
				require.NoError(t, err)
			}
			_, err = db.Pool().Exec(ctx, tc.corrupt)
			require.NoError(t, err)

			_, err = st.Load(ctx, tc.id)
			requireStoreFailure(t, err, false, "load")
			_, err = st.Update(ctx, tc.id, func(s *session.Set) (*session.Set, error) {
				t.Error("fn ran on a corrupt session")
				return s, nil
			})
			requireStoreFailure(t, err, false, "update")
			_, err = st.IDs(ctx)
			if tc.ids {
				requireStoreFailure(t, err, false, "ids")
			} else {
				require.NoError(t, err)
			}
			ok, _ := db.Healthy()
			assert.True(t, ok, "the database answered: bad data is no outage")
		})
	}
}

// TestSessionUpdateContract: fn's error comes back unchanged with nothing
// stored; a set the tables cannot hold faithfully is refused; a nil set
// deletes the session, its activations going into the history, which is
// append-only.
func TestSessionUpdateContract(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, "node-a")
	st := db.Sessions()
	snap := sessCatalog(t).Snapshot()
	_, err := session.Activate(ctx, st, snap, "s", "files_read")
	require.NoError(t, err)

	mine := errors.New("refused by fn")
	_, err = st.Update(ctx, "s", func(s *session.Set) (*session.Set, error) {
		delete(s.Activated, "mcp.files:read")
		return nil, mine
	})
	require.Equal(t, mine, err, "fn's error, unchanged")
	set, err := st.Load(ctx, "s")
	require.NoError(t, err)
	assert.Contains(t, set.Activated, "mcp.files:read", "nothing stored")

	for name, forge := range map[string]func(s *session.Set){
		"other id": func(s *session.Set) { s.ID = "t" },
		"forged grant": func(s *session.Set) {
			a := s.Activated["mcp.files:read"]
			a.Grant.Session = "t"
			s.Activated["mcp.files:read"] = a
		},
		"misfiled":   func(s *session.Set) { s.Activated["other"] = s.Activated["mcp.files:read"] },
		"empty tool": func(s *session.Set) { s.Core[""] = session.Pin{} },
	} {
		_, err := st.Update(ctx, "s", func(s *session.Set) (*session.Set, error) { forge(s); s.Version++; return s, nil })
		requireStoreFailure(t, err, false, name)
	}
	set, err = st.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), set.Version, "no forged set was stored")

	// The version is an unsigned 64-bit integer all the way up.
	_, err = db.Pool().Exec(ctx, "UPDATE gatehost_sessions SET version = $1::text::numeric WHERE id = 's'", fmt.Sprint(uint64(math.MaxUint64)))
	require.NoError(t, err)
	set, err = st.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), set.Version)
	_, err = session.Activate(ctx, st, snap, "s", "echo")
	assert.ErrorIs(t, err, session.ErrVersionOverflow)

	got, err := st.Update(ctx, "s", func(*session.Set) (*session.Set, error) { return nil, nil })
	require.NoError(t, err)
	assert.Nil(t, got)
	gone, err := st.Load(ctx, "s")
	require.NoError(t, err)
	assert.Nil(t, gone)
	var n int
	require.NoError(t, db.Pool().QueryRow(ctx, "SELECT count(*) FROM gatehost_session_tools").Scan(&n))
	assert.Zero(t, n)
	assert.Equal(t, []string{fmt.Sprintf("mcp.files:read@%d/node-a", uint64(math.MaxUint64))}, revocations(t, db, "s"))
	_, err = db.Pool().Exec(ctx, "DELETE FROM gatehost_session_revocations")
	assert.ErrorContains(t, err, "append-only")
	_, err = db.Pool().Exec(ctx, "UPDATE gatehost_session_revocations SET tool = 'x'")
	assert.ErrorContains(t, err, "append-only")
}
