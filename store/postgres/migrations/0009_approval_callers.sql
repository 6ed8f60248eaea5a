-- The caller an approval is bound to (approval.Binding's caller_key), and
-- the request it was minted for. Rows an earlier version wrote name no
-- caller (''): they confirm no call (fail closed).
ALTER TABLE gatehost_approvals ADD COLUMN caller_key text NOT NULL DEFAULT '';
ALTER TABLE gatehost_approvals ADD COLUMN request_id text NOT NULL DEFAULT '';
