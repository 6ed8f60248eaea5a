-- The MCP gateway's tool trust baseline (package mcpgateway/baseline): the
-- definition approved for each tool of each upstream. definition holds the
-- bytes the digest was computed over (the canonical JSON of which is
-- digest), kept as bytea so that they come back byte for byte whatever the
-- database's encoding; readers recompute the digest and refuse a row that
-- does not match.
CREATE TABLE gatehost_tool_baseline (
    upstream    text NOT NULL CHECK (upstream <> ''),
    tool        text NOT NULL CHECK (tool <> ''),
    digest      text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    definition  bytea NOT NULL,
    approved_by text NOT NULL CHECK (approved_by <> ''),
    approved_at timestamptz NOT NULL,
    PRIMARY KEY (upstream, tool)
);
