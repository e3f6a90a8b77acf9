-- 4: convergence: attempts and strategies, who worked a task, the red phase, manifest versions, dead letters
ALTER TABLE tasks ADD COLUMN strategy TEXT NOT NULL DEFAULT 'initial';
ALTER TABLE tasks ADD COLUMN shifts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN strategy_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN workers TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tasks ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tasks ADD COLUMN manifest_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE tasks ADD COLUMN red TEXT;
CREATE TABLE task_manifests (
    task_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    manifest TEXT NOT NULL,
    by TEXT NOT NULL,
    time TEXT NOT NULL,
    why TEXT,
    PRIMARY KEY (task_id, version)
);
CREATE TABLE deadletters (
    id TEXT PRIMARY KEY,
    time TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool TEXT NOT NULL,
    task_id TEXT,
    principal TEXT,
    trace_id TEXT,
    error TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'dead',
    replayed_at TEXT,
    replay_result TEXT
);
CREATE INDEX deadletters_state ON deadletters (state, time);
