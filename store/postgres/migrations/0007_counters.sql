-- The counts of the tool calls the hosts accepted (package host/counter),
-- shared by every replica so that a rate limit holds whichever replica
-- decides a call. gatehost_counter_calls keeps each accepted call for the
-- longest window a host counts over (31 days); older rows are deleted by
-- the adds that follow. gatehost_counter_totals keeps each session's
-- count per tool since its first call.
CREATE TABLE gatehost_counter_calls (
    id        bigserial PRIMARY KEY,
    session   text NOT NULL,
    principal text NOT NULL,
    tool      text NOT NULL CHECK (tool <> ''),
    at        timestamptz NOT NULL,
    CHECK (session <> '' OR principal <> '')
);

CREATE INDEX gatehost_counter_calls_session ON gatehost_counter_calls (session, at) WHERE session <> '';
CREATE INDEX gatehost_counter_calls_principal ON gatehost_counter_calls (principal, at) WHERE principal <> '';
CREATE INDEX gatehost_counter_calls_at ON gatehost_counter_calls (at);

CREATE TABLE gatehost_counter_totals (
    session text NOT NULL CHECK (session <> ''),
    tool    text NOT NULL CHECK (tool <> ''),
    calls   bigint NOT NULL CHECK (calls > 0),
    PRIMARY KEY (session, tool)
);
