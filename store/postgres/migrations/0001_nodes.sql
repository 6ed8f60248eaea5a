-- Replicas that have opened the store, for operators and for log verify.
CREATE TABLE gatehost_nodes (
    node_id    text PRIMARY KEY,
    first_seen timestamptz NOT NULL DEFAULT now(),
    last_seen  timestamptz NOT NULL DEFAULT now()
);
