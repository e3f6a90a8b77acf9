-- 8: signed attestations of merges (gateway/attest/): the DSSE envelope, recorded before the branch moves
CREATE TABLE attestations (
    commit_id TEXT PRIMARY KEY,
    tree TEXT NOT NULL,
    ref TEXT NOT NULL,
    intent_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    kid TEXT NOT NULL,
    envelope TEXT NOT NULL,
    state TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE INDEX attestations_state ON attestations (state);
