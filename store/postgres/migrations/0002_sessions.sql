-- Agent sessions' tool sets (host/session), one row per session and one
-- per pin or grant, so that a fleet's replicas read and change the same
-- sessions. Versions and catalog generations are unsigned 64-bit integers
-- in Go: numeric(20,0) holds every one of them, bigint would not.

CREATE TABLE gatehost_sessions (
    id         text PRIMARY KEY
               CONSTRAINT gatehost_sessions_id_valid CHECK (id ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    version    numeric(20,0) NOT NULL
               CONSTRAINT gatehost_sessions_version_range CHECK (version >= 0 AND version <= 18446744073709551615),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- A core pin (core, no catalog generation) or an activation grant (not
-- core, with the generation it was made or last carried forward at). A
-- tool may have both: a core pin whose tool drifted is granted again as an
-- activation until the session is rebuilt.
CREATE TABLE gatehost_session_tools (
    session            text NOT NULL REFERENCES gatehost_sessions (id) ON DELETE CASCADE,
    tool               text NOT NULL
                       CONSTRAINT gatehost_session_tools_tool_valid CHECK (tool <> ''),
    core               boolean NOT NULL,
    schema_digest      text NOT NULL,
    policy_digest      text NOT NULL DEFAULT '',
    provenance         text NOT NULL,
    catalog_generation numeric(20,0)
                       CONSTRAINT gatehost_session_tools_generation_range CHECK (catalog_generation >= 0 AND catalog_generation <= 18446744073709551615),
    -- The digest of the catalog snapshot a grant was made or carried
    -- forward at ('' for a core pin, and for a grant made before digests).
    catalog_digest     text NOT NULL DEFAULT '',
    granted_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session, core, tool),
    CONSTRAINT gatehost_session_tools_generation_iff_grant CHECK (core = (catalog_generation IS NULL))
);

-- Every activation an update removed (a revocation, a rebuild dropping a
-- drifted or removed tool, a session deleted): append-only history, kept
-- when the session goes. version is the session's version after the
-- removal; node the replica that made it.
CREATE TABLE gatehost_session_revocations (
    seq        bigserial PRIMARY KEY,
    session    text NOT NULL,
    tool       text NOT NULL,
    version    numeric(20,0) NOT NULL,
    revoked_at timestamptz NOT NULL DEFAULT now(),
    node       text NOT NULL
);
CREATE INDEX gatehost_session_revocations_session ON gatehost_session_revocations (session, seq);

CREATE FUNCTION gatehost_session_revocations_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'gatehost_session_revocations is append-only';
END
$$;

CREATE TRIGGER gatehost_session_revocations_append_only
    BEFORE UPDATE OR DELETE ON gatehost_session_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION gatehost_session_revocations_append_only();
