-- 6: where an approved call runs: the channel it came by and its confinement (gateway/approvals.py); rows
-- asked before have neither and authorise nothing. The same call approved elsewhere is found by its tool
-- and arguments.
ALTER TABLE approvals ADD COLUMN channel TEXT;
ALTER TABLE approvals ADD COLUMN confinement TEXT;
CREATE INDEX approvals_call ON approvals (tool, arguments_digest, state);
