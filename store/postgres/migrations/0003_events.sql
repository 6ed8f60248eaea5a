-- The event log: hash chains of records, one chain per node or one for the
-- fleet. line is the record's canonical encoding (host/eventlog), the bytes
-- that are hashed and verified; the other columns repeat fields of it for
-- queries, and verification checks that they agree with it.
CREATE TABLE gatehost_events (
    chain    text        NOT NULL,
    seq      bigint      NOT NULL CHECK (seq > 0),
    hash     text        NOT NULL,
    prev     text        NOT NULL,
    time     timestamptz NOT NULL,
    kind     text        NOT NULL,
    run_id   text        NOT NULL,
    pipeline text        NOT NULL,
    verdict  text        NOT NULL,
    line     text        NOT NULL,
    node     text        NOT NULL,
    PRIMARY KEY (chain, seq)
);

-- The head of each chain: the seq and hash of its last record (0 and 64
-- zeros before the first), updated in the transaction that appends. An
-- appender locks this row (SELECT … FOR UPDATE), which serializes the
-- appends of one chain across replicas.
CREATE TABLE gatehost_chain_heads (
    chain      text        PRIMARY KEY,
    seq        bigint      NOT NULL CHECK (seq >= 0),
    hash       text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
