package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehost/gatehost/host/catalog"
)

var (
	// ErrNoCatalog: no catalog has been published to the store.
	ErrNoCatalog = errors.New("pgstore: no catalog published")
	// ErrCatalogIntegrity: the published catalog's content is not a
	// catalog, or not the one its digest names. It is never loaded.
	ErrCatalogIntegrity = errors.New("pgstore: published catalog fails verification")
)

// DefaultCatalogPoll is WatchCatalog's interval when it is given none.
const DefaultCatalogPoll = 5 * time.Second

// PublishCatalog stores snap's content (catalog.Snapshot.MarshalNative:
// every field of every tool, input schemas included) under its digest
// (catalog.Snapshot.Digest) and makes it the head, the catalog replicas
// with store.catalog: published serve. It returns the digest.
//
// Publishing is idempotent: a catalog already stored is not stored again
// (its row keeps its first publisher and time), and publishing the head
// again changes nothing. Every move of the head, to a new catalog or back
// to an earlier one, appends one row to gatehost_catalog_publications
// with the node (Options.NodeID) and the digest it replaced. Concurrent
// publishers serialise on the head; the last to commit wins.
//
// Errors: a catalog whose document exceeds catalog.MaxFileBytes wraps
// catalog.ErrTooLarge (nothing is written); any database failure wraps
// ErrUnavailable.
func (db *DB) PublishCatalog(ctx context.Context, snap *catalog.Snapshot) (string, error) {
	if snap == nil {
		return "", errors.New("pgstore: publish catalog: no snapshot")
	}
	content, err := snap.MarshalNative()
	if err != nil {
		return "", fmt.Errorf("pgstore: publish catalog: %w", err)
	}
	digest, node := snap.Digest(), db.opts.NodeID
	err = db.Tx(ctx, "catalog_publish", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO gatehost_catalogs (digest, content, tools, published_by)
			VALUES ($1, $2, $3, $4) ON CONFLICT (digest) DO NOTHING`, digest, content, snap.Len(), node); err != nil {
			return fmt.Errorf("store catalog: %w", err)
		}
		// The head row exists from the migration on; if it was deleted,
		// the upsert below puts it back.
		var head *string
		err := tx.QueryRow(ctx, `SELECT digest FROM gatehost_catalog_head WHERE singleton FOR UPDATE`).Scan(&head)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("lock head: %w", err)
		}
		if head != nil && *head == digest {
			return nil
		}
		var seq int64
		if err := tx.QueryRow(ctx, `INSERT INTO gatehost_catalog_publications (digest, previous, published_by)
			VALUES ($1, $2, $3) RETURNING seq`, digest, head, node).Scan(&seq); err != nil {
			return fmt.Errorf("record publication: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO gatehost_catalog_head (singleton, digest, publication) VALUES (true, $1, $2)
			ON CONFLICT (singleton) DO UPDATE SET digest = EXCLUDED.digest, publication = EXCLUDED.publication, updated_at = now()`,
			digest, seq); err != nil {
			return fmt.Errorf("move head: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return digest, nil
}

// PublishedCatalog returns the head catalog's digest and tools, verified:
// its content must parse as a native catalog document whose tools form a
// catalog (catalog.NewStore) with exactly that digest, and whose input
// schemas compile (catalog.CheckSchemas). catalog.NewStore(tools...) then
// gives a snapshot with the same Digest.
//
// Errors: ErrNoCatalog when nothing was published; ErrCatalogIntegrity
// (with no tools) when the content fails any check; ErrUnavailable on a
// database failure.
func (db *DB) PublishedCatalog(ctx context.Context) (string, []catalog.Tool, error) {
	_, digest, tools, err := db.pullCatalog(ctx)
	if err != nil {
		return "", nil, err
	}
	return digest, tools, nil
}

// catalogHead returns the head's digest; ErrNoCatalog when there is none.
func (db *DB) catalogHead(ctx context.Context) (string, error) {
	var head *string
	err := db.Op(ctx, "catalog_head", func(ctx context.Context) error {
		err := db.pool.QueryRow(ctx, `SELECT digest FROM gatehost_catalog_head WHERE singleton`).Scan(&head)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if head == nil {
		return "", ErrNoCatalog
	}
	return *head, nil
}

// pullCatalog reads and verifies the head catalog. head is the digest the
// head named, also when its content failed verification.
func (db *DB) pullCatalog(ctx context.Context) (head, digest string, tools []catalog.Tool, err error) {
	var (
		name    *string
		size    *int64
		content []byte
	)
	err = db.Op(ctx, "catalog_pull", func(ctx context.Context) error {
		// A content beyond the cap is not fetched: it could not be a
		// catalog, and it could be a gigabyte.
		err := db.pool.QueryRow(ctx, `SELECT h.digest, octet_length(c.content),
				CASE WHEN octet_length(c.content) <= $1 THEN c.content END
			FROM gatehost_catalog_head h LEFT JOIN gatehost_catalogs c ON c.digest = h.digest
			WHERE h.singleton`, catalog.MaxFileBytes).Scan(&name, &size, &content)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	switch {
	case err != nil:
		return "", "", nil, err
	case name == nil:
		return "", "", nil, ErrNoCatalog
	case size == nil:
		return *name, "", nil, fmt.Errorf("%w: catalog %s: the head names no stored catalog", ErrCatalogIntegrity, *name)
	case content == nil:
		return *name, "", nil, fmt.Errorf("%w: catalog %s: %d bytes, more than %d", ErrCatalogIntegrity, *name, *size, catalog.MaxFileBytes)
	}
	tools, err = decodeCatalog(*name, content)
	if err != nil {
		return *name, "", nil, err
	}
	return *name, *name, tools, nil
}

// decodeCatalog verifies that content is the catalog digest names and
// returns its tools. Every failure wraps ErrCatalogIntegrity.
func decodeCatalog(digest string, content []byte) ([]catalog.Tool, error) {
	bad := func(format string, args ...any) ([]catalog.Tool, error) {
		return nil, fmt.Errorf("%w: catalog %.64q: %s", ErrCatalogIntegrity, digest, fmt.Sprintf(format, args...))
	}
	tools, err := catalog.Parse(content, catalog.ImportOptions{Format: catalog.FormatNative})
	if err != nil {
		return bad("content: %v", err)
	}
	s, err := catalog.NewStore(tools...)
	if err != nil {
		return bad("content: %v", err)
	}
	if got := s.Snapshot().Digest(); got != digest {
		return bad("content has digest %s", got)
	}
	if err := catalog.CheckSchemas(tools); err != nil {
		return bad("%v", err)
	}
	return tools, nil
}

// WatchCatalog polls the head every interval (DefaultCatalogPoll if not
// positive) until ctx is done, and calls fn with the head's digest and
// tools (verified as PublishedCatalog verifies them) whenever the head
// names another catalog than the one fn last received; the first call
// comes at the first successful poll, even if the caller already serves
// that catalog (compare the digest). fn runs on the watching goroutine,
// one call at a time, and the next poll waits for it.
//
// fn is never called with a catalog that fails verification: such a head
// is logged once and skipped until the head moves. While nothing is
// published fn is not called. A database failure is logged when it
// begins and retried with backoff, doubling from interval up to eight
// intervals; the first success after it is logged too.
func (db *DB) WatchCatalog(ctx context.Context, interval time.Duration, fn func(digest string, tools []catalog.Tool)) {
	if interval <= 0 {
		interval = DefaultCatalogPoll
	}
	var (
		delivered, refused string
		failing, empty     bool
		wait               time.Duration // the first poll is at once
	)
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		head, tools, err := db.pollCatalog(ctx, delivered, refused)
		switch {
		case err == nil:
			if failing {
				db.logger.Info("pgstore: catalog watch: the head can be read again", "node", db.opts.NodeID)
			}
			failing, empty, wait = false, false, interval
			if tools != nil {
				delivered = head
				fn(head, tools)
			}
		case errors.Is(err, ErrNoCatalog):
			if !empty {
				db.logger.Info("pgstore: catalog watch: no catalog published yet", "node", db.opts.NodeID)
			}
			failing, empty, wait = false, true, interval
		case errors.Is(err, ErrCatalogIntegrity):
			db.logger.Error("pgstore: catalog watch: the published catalog fails verification; keeping the current one", "node", db.opts.NodeID, "err", err)
			refused, failing, wait = head, false, interval
		default:
			if ctx.Err() != nil {
				return
			}
			if !failing {
				db.logger.Warn("pgstore: catalog watch: cannot read the published catalog; retrying", "node", db.opts.NodeID, "err", err)
			}
			failing, wait = true, min(max(wait*2, interval), 8*interval)
		}
	}
}

// pollCatalog is one poll of WatchCatalog: tools is nil when the head is
// delivered or refused (already seen), otherwise the verified head. head
// is set with an ErrCatalogIntegrity error too.
func (db *DB) pollCatalog(ctx context.Context, delivered, refused string) (head string, tools []catalog.Tool, err error) {
	head, err = db.catalogHead(ctx)
	if err != nil || head == delivered || head == refused {
		return head, nil, err
	}
	// The head may move between the two reads; what is pulled is what
	// is delivered.
	head, digest, tools, err := db.pullCatalog(ctx)
	if err != nil || digest == delivered {
		return head, nil, err
	}
	return digest, tools, nil
}
