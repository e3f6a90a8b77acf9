-- 1: the ledger, revocations, checkpoints, approvals, tasks and intents
CREATE TABLE ledger (
    seq INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX ledger_trace ON ledger (json_extract(body, '$.trace_id'));
CREATE TABLE revocations (jti TEXT PRIMARY KEY, time TEXT NOT NULL, reason TEXT);
CREATE TABLE checkpoints (
    id TEXT PRIMARY KEY,
    time TEXT NOT NULL,
    kind TEXT NOT NULL,
    workspace TEXT NOT NULL,
    ref TEXT,
    call_id TEXT,
    detail TEXT NOT NULL
);
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    call_key TEXT NOT NULL,
    state TEXT NOT NULL,
    created TEXT NOT NULL,
    expires TEXT NOT NULL,
    principal TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments_digest TEXT NOT NULL,
    request TEXT NOT NULL,
    settled_by TEXT,
    settled_at TEXT,
    used_by_call TEXT
);
CREATE INDEX approvals_key ON approvals (call_key, state);
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    manifest TEXT NOT NULL,
    state TEXT NOT NULL,
    base_branch TEXT NOT NULL,
    base_commit TEXT NOT NULL,
    branch TEXT NOT NULL,
    worktree TEXT,
    owner TEXT,
    claim_expires TEXT,
    attempt INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    trace_id TEXT NOT NULL,
    submitted_by TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    report TEXT,
    verification TEXT,
    blocker TEXT,
    note TEXT
);
CREATE TABLE intents (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    action TEXT NOT NULL,
    arguments TEXT NOT NULL,
    state TEXT NOT NULL,
    proposed_by TEXT NOT NULL,
    approved_by TEXT,
    committed_by TEXT,
    outcome TEXT,
    trace_id TEXT,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
