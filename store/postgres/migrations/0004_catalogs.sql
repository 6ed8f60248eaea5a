-- Catalog snapshots published for the fleet, named by their content
-- digest (catalog.Snapshot.Digest: 64 lowercase hex digits). content is
-- the snapshot's native catalog document (catalog.Snapshot.MarshalNative),
-- kept as bytes so that schemas come back byte for byte. A row never
-- changes once written: publishing the same catalog again reuses it.
CREATE TABLE gatehost_catalogs (
    digest       text PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
    content      bytea NOT NULL,
    tools        integer NOT NULL CHECK (tools >= 0),
    published_at timestamptz NOT NULL DEFAULT now(),
    published_by text NOT NULL
);

-- Every move of the head, in order: what was published, by which node,
-- and what it replaced (NULL for the first).
CREATE TABLE gatehost_catalog_publications (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest       text NOT NULL REFERENCES gatehost_catalogs (digest),
    previous     text REFERENCES gatehost_catalogs (digest),
    published_at timestamptz NOT NULL DEFAULT now(),
    published_by text NOT NULL
);

-- The catalog replicas with store.catalog: published serve: one row,
-- present from the start so that publishers serialise on it; digest is
-- NULL until the first publication.
CREATE TABLE gatehost_catalog_head (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    digest      text REFERENCES gatehost_catalogs (digest),
    publication bigint REFERENCES gatehost_catalog_publications (seq),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((digest IS NULL) = (publication IS NULL))
);
INSERT INTO gatehost_catalog_head (singleton) VALUES (true);
