-- 9: versioned shared artifacts (gateway/artifacts/): canonical revisions, a task's puts until its merge
-- commits, and conflicts for a person or an arbitrating role
CREATE TABLE artifacts (
    key TEXT NOT NULL,
    revision INTEGER NOT NULL,
    digest TEXT NOT NULL,
    content TEXT NOT NULL,
    base INTEGER NOT NULL,
    provenance TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (key, revision)
);
CREATE TABLE artifact_puts (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    key TEXT NOT NULL,
    base INTEGER NOT NULL,
    digest TEXT NOT NULL,
    content TEXT NOT NULL,
    provenance TEXT NOT NULL,
    state TEXT NOT NULL,
    revision INTEGER,
    created TEXT NOT NULL
);
CREATE INDEX artifact_puts_task ON artifact_puts (task_id, state);
CREATE TABLE artifact_conflicts (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    base INTEGER NOT NULL,
    current INTEGER NOT NULL,
    put_id TEXT NOT NULL,
    state TEXT NOT NULL,
    resolved_by TEXT,
    resolution INTEGER,
    created TEXT NOT NULL,
    updated TEXT
);
