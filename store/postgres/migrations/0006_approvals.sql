-- Approvals of single tool calls (package approval), shared by every
-- replica so that a call approved through one can run on another, and
-- used at most once across all of them: a take locks its row (SELECT …
-- FOR UPDATE) and marks it used in one transaction. A used approval keeps
-- its row until it expires, so that a replay is refused as used; expired
-- rows are deleted by the next mint, or by the take that finds them.
CREATE TABLE gatehost_approvals (
    id             text PRIMARY KEY CHECK (id ~ '^ap-[0-9a-f]{32}$'),
    pipeline       text NOT NULL CHECK (pipeline <> ''),
    session        text NOT NULL,
    tool           text NOT NULL CHECK (tool <> ''),
    schema_digest  text NOT NULL,
    subject_sha256 text NOT NULL CHECK (subject_sha256 ~ '^[0-9a-f]{64}$'),
    approver       text NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);

CREATE INDEX gatehost_approvals_expires_at ON gatehost_approvals (expires_at);
