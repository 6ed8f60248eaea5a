-- Calls waiting for a person's approval (package approval's Request),
-- shared by every replica so that the approval page of any replica lists
-- them and an approval given on one is found by another. The request is
-- kept whole in doc (the page's view of it); the columns are what the
-- rule reads under a row lock: at most one request open per binding
-- (binding_key), decided once (state), until expires_at.
CREATE TABLE gatehost_approval_requests (
    id          text PRIMARY KEY CHECK (id ~ '^rq-[0-9a-f]{32}$'),
    binding_key text NOT NULL,
    state       text NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'used')),
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    doc         jsonb NOT NULL
);

CREATE INDEX gatehost_approval_requests_binding ON gatehost_approval_requests (binding_key);
CREATE INDEX gatehost_approval_requests_expires_at ON gatehost_approval_requests (expires_at);
