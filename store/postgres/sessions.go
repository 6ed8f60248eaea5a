package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/runecut"
)

// storeFailure is session.Error's Code for session.ErrStore.
const storeFailure = "store_failure"

// sessionLockClass is the first key of the transaction-level advisory lock
// (pg_advisory_xact_lock(int4, int4)) an Update takes on its session id;
// the second is hashtext(id). Two-key locks do not share a key space with
// the one-key migration lock.
const sessionLockClass int32 = 0x67617465 // "gate"

// Sessions returns the database's session store (tables gatehost_sessions,
// gatehost_session_tools and gatehost_session_revocations).
//
// The store keeps no cache: every Load and IDs is a query, and every
// Update a transaction that commits before it returns. So a revocation
// that Revoke returned from on one replica is seen by the next Load of
// every replica of the same database: no replica goes on authorizing a
// revoked tool from a stale copy.
//
// Errors are *session.Error values with Code "store_failure" wrapping
// session.ErrStore: a database failure also wraps ErrUnavailable; a row
// that is not a valid session (a bad id, a version or generation out of
// range, a pin that is neither core nor grant) does not, since the
// database answered — it is never read as an absent session.
func (db *DB) Sessions() session.Store { return &sessionStore{db: db} }

type sessionStore struct{ db *DB }

// toolKey names a row of gatehost_session_tools within its session.
type toolKey struct {
	core bool
	tool string
}

// toolRow is the rest of a gatehost_session_tools row; gen is nil for a
// core pin.
type toolRow struct {
	pin    session.Pin
	gen    *uint64
	digest string // the grant's catalog digest
}

// storeErr is a session.ErrStore error of op on id.
func storeErr(op, id string, err error) error {
	return &session.Error{Op: op, Session: cut(id), Code: storeFailure,
		Err: fmt.Errorf("%w: postgresql: %w", session.ErrStore, err)}
}

// errCorrupt marks rows that are no valid session, and a set that the
// tables cannot hold: ErrStore, with the database healthy.
var errCorrupt = errors.New("corrupt session row")

// loadSet reads session id in one statement, hence from one snapshot: the
// version and the tools are those of the same committed update. lock takes
// the session row FOR UPDATE. It returns nil for a session not held, and
// an error wrapping errCorrupt for rows that are no valid session.
func loadSet(ctx context.Context, q querier, id string, lock bool) (*session.Set, map[toolKey]toolRow, error) {
	sql := `SELECT s.version::text, t.tool, t.core, t.schema_digest, t.policy_digest, t.provenance, t.catalog_generation::text, t.catalog_digest
		FROM gatehost_sessions s LEFT JOIN gatehost_session_tools t ON t.session = s.id
		WHERE s.id = $1`
	if lock {
		sql += " FOR UPDATE OF s"
	}
	rows, err := q.Query(ctx, sql, id)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var set *session.Set
	tools := map[toolKey]toolRow{}
	for rows.Next() {
		var version string
		var tool, schema, policy, prov, gen, digest *string
		var core *bool
		if err := rows.Scan(&version, &tool, &core, &schema, &policy, &prov, &gen, &digest); err != nil {
			return nil, nil, err
		}
		if set == nil {
			v, err := strconv.ParseUint(version, 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: session %q: version %q is not an unsigned 64-bit integer", errCorrupt, cut(id), cut(version))
			}
			if !session.ValidID(id) {
				return nil, nil, fmt.Errorf("%w: session %q: not a valid session id", errCorrupt, cut(id))
			}
			set = &session.Set{ID: id, Version: v, Core: map[string]session.Pin{}, Activated: map[string]session.Activation{}}
		}
		if tool == nil { // the LEFT JOIN's row of a session with no tools
			continue
		}
		if *tool == "" || core == nil || schema == nil || policy == nil || prov == nil || digest == nil || *core != (gen == nil) {
			return nil, nil, fmt.Errorf("%w: session %q: tool %q is neither a core pin nor an activation grant", errCorrupt, cut(id), cut(*tool))
		}
		r := toolRow{pin: session.Pin{SchemaDigest: *schema, PolicyDigest: *policy, Provenance: *prov}, digest: *digest}
		if gen != nil {
			g, err := strconv.ParseUint(*gen, 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: session %q: tool %q: catalog generation %q is not an unsigned 64-bit integer", errCorrupt, cut(id), cut(*tool), cut(*gen))
			}
			r.gen = &g
		}
		tools[toolKey{*core, *tool}] = r
		if *core {
			set.Core[*tool] = r.pin
		} else {
			set.Activated[*tool] = session.Activation{
				Grant: session.Grant{Session: id, Tool: *tool, CatalogGeneration: *r.gen, CatalogDigest: r.digest,
					SchemaDigest: r.pin.SchemaDigest, PolicyDigest: r.pin.PolicyDigest},
				Provenance: r.pin.Provenance,
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return set, tools, nil
}

func cut(s string) string { return runecut.Cut(s, 128, "...") }

// rowsOf is the gatehost_session_tools rows of s. It refuses a set the
// tables cannot hold faithfully: one whose id is not id, or whose grant
// covers another session or tool than the one it is filed under.
func rowsOf(id string, s *session.Set) (map[toolKey]toolRow, error) {
	if s.ID != id || !session.ValidID(id) {
		return nil, fmt.Errorf("the set to store has id %q, not the valid session id %q", cut(s.ID), cut(id))
	}
	rows := make(map[toolKey]toolRow, len(s.Core)+len(s.Activated))
	for tool, p := range s.Core {
		if tool == "" {
			return nil, errors.New("a core pin has no tool id")
		}
		rows[toolKey{true, tool}] = toolRow{pin: p}
	}
	for tool, a := range s.Activated {
		if tool == "" || a.Grant.Session != id || a.Grant.Tool != tool {
			return nil, fmt.Errorf("the grant under %q covers session %q, tool %q", cut(tool), cut(a.Grant.Session), cut(a.Grant.Tool))
		}
		g := a.Grant.CatalogGeneration
		rows[toolKey{false, tool}] = toolRow{pin: a.Pin(), gen: &g, digest: a.Grant.CatalogDigest}
	}
	return rows, nil
}

func genText(g *uint64) *string {
	if g == nil {
		return nil
	}
	s := strconv.FormatUint(*g, 10)
	return &s
}

// Load implements session.Store: one query, no cache.
func (st *sessionStore) Load(ctx context.Context, id string) (*session.Set, error) {
	var set *session.Set
	err := st.db.Op(ctx, "session_load", func(ctx context.Context) error {
		s, _, err := loadSet(ctx, st.db.pool, id, false)
		if errors.Is(err, errCorrupt) {
			return Passthrough(err) // the database answered
		}
		set = s
		return err
	})
	if err != nil {
		return nil, storeErr("load", id, err)
	}
	return set, nil
}

// IDs implements session.Store.
func (st *sessionStore) IDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := st.db.Op(ctx, "session_ids", func(ctx context.Context) error {
		rows, err := st.db.pool.Query(ctx, "SELECT id FROM gatehost_sessions")
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range got {
			if !session.ValidID(id) {
				return Passthrough(fmt.Errorf("%w: %q is not a valid session id", errCorrupt, cut(id)))
			}
		}
		ids = got
		return nil
	})
	if err != nil {
		return nil, storeErr("load", "", err)
	}
	// Sorted bytewise, as the other stores sort: the database's collation
	// may order case and punctuation otherwise.
	slices.Sort(ids)
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// Update implements session.Store. It runs in one transaction: it takes a
// transaction-level advisory lock on the session id, reads the set (FOR
// UPDATE), runs fn, writes the rows that differ and commits before it
// returns. The advisory lock, not only the row lock, is what serializes
// Updates: a session not yet held has no row to lock, and two replicas
// creating it at once must not both see it absent. The lock is keyed by
// hashtext(id), so two sessions whose ids collide merely wait for each
// other; it is released at commit or rollback, also when the connection
// dies. Under READ COMMITTED the read that follows the lock sees every
// Update committed before the lock was granted.
//
// fn's error comes back unchanged and nothing is written. Removing an
// activation appends a row to gatehost_session_revocations in the same
// transaction.
func (st *sessionStore) Update(ctx context.Context, id string, fn func(*session.Set) (*session.Set, error)) (*session.Set, error) {
	var out *session.Set
	var mine error // fn's error, or the rows' or the set's fault
	err := st.db.Tx(ctx, "session_update", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", sessionLockClass, id); err != nil {
			return err
		}
		cur, have, err := loadSet(ctx, tx, id, true)
		if errors.Is(err, errCorrupt) {
			mine = storeErr("load", id, err)
			return Passthrough(mine)
		}
		if err != nil {
			return err
		}
		next, err := fn(cur.Clone())
		if err != nil {
			mine = err
			return Passthrough(err)
		}
		if err := st.write(ctx, tx, id, cur, have, next); err != nil {
			if errors.Is(err, errCorrupt) {
				mine = storeErr("save", id, err)
				return Passthrough(mine)
			}
			return err
		}
		out = next.Clone()
		return nil
	})
	switch {
	case err == nil:
		return out, nil
	case mine != nil && errors.Is(err, mine):
		return nil, err
	default:
		return nil, storeErr("save", id, err)
	}
}

// write stores next over cur (whose rows are have): the session row, the
// rows of gatehost_session_tools that differ, and a revocation for each
// activation next no longer holds. A nil next deletes the session.
func (st *sessionStore) write(ctx context.Context, tx pgx.Tx, id string, cur *session.Set, have map[toolKey]toolRow, next *session.Set) error {
	b := &pgx.Batch{}
	revoked := func(version uint64) {
		if cur == nil {
			return
		}
		for _, tool := range slices.Sorted(maps.Keys(cur.Activated)) {
			if next != nil {
				if _, kept := next.Activated[tool]; kept {
					continue
				}
			}
			b.Queue(`INSERT INTO gatehost_session_revocations (session, tool, version, node) VALUES ($1, $2, $3::text::numeric, $4)`,
				id, tool, strconv.FormatUint(version, 10), st.db.NodeID())
		}
	}
	switch {
	case next == nil && cur == nil:
		return nil
	case next == nil:
		revoked(cur.Version)
		b.Queue("DELETE FROM gatehost_sessions WHERE id = $1", id)
	default:
		want, err := rowsOf(id, next)
		if err != nil {
			return fmt.Errorf("%w: %w", errCorrupt, err)
		}
		version := strconv.FormatUint(next.Version, 10)
		if cur == nil {
			b.Queue("INSERT INTO gatehost_sessions (id, version) VALUES ($1, $2::text::numeric)", id, version)
		}
		for k := range have {
			if _, ok := want[k]; !ok {
				b.Queue("DELETE FROM gatehost_session_tools WHERE session = $1 AND core = $2 AND tool = $3", id, k.core, k.tool)
			}
		}
		for _, k := range sortedKeys(want) {
			r := want[k]
			old, ok := have[k]
			switch {
			case !ok:
				b.Queue(`INSERT INTO gatehost_session_tools (session, tool, core, schema_digest, policy_digest, provenance, catalog_generation, catalog_digest)
					VALUES ($1, $2, $3, $4, $5, $6, $7::text::numeric, $8)`,
					id, k.tool, k.core, r.pin.SchemaDigest, r.pin.PolicyDigest, r.pin.Provenance, genText(r.gen), r.digest)
			case old.pin != r.pin:
				// A new grant of a changed tool: granted now.
				b.Queue(`UPDATE gatehost_session_tools SET schema_digest = $4, policy_digest = $5, provenance = $6,
					catalog_generation = $7::text::numeric, catalog_digest = $8, granted_at = now() WHERE session = $1 AND core = $3 AND tool = $2`,
					id, k.tool, k.core, r.pin.SchemaDigest, r.pin.PolicyDigest, r.pin.Provenance, genText(r.gen), r.digest)
			case !sameGen(old.gen, r.gen) || old.digest != r.digest:
				// Carried forward by a rebuild: still the grant made then.
				b.Queue(`UPDATE gatehost_session_tools SET catalog_generation = $4::text::numeric, catalog_digest = $5
					WHERE session = $1 AND core = $3 AND tool = $2`, id, k.tool, k.core, genText(r.gen), r.digest)
			}
		}
		revoked(next.Version)
		if cur != nil && (b.Len() > 0 || next.Version != cur.Version) {
			b.Queue("UPDATE gatehost_sessions SET version = $2::text::numeric, updated_at = now() WHERE id = $1", id, version)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

func sameGen(a, b *uint64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// sortedKeys orders rows for writing, so that concurrent writers (of
// other sessions) touch index pages in one order.
func sortedKeys(m map[toolKey]toolRow) []toolKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b toolKey) int {
		if a.core != b.core {
			if a.core {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.tool, b.tool)
	})
}
