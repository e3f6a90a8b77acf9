-- 13: calls run as 2026-07-28 tasks (gateway/call_tasks.py): their state, so a poll after a crash is answered
CREATE TABLE call_tasks (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    result TEXT,
    error TEXT,
    process TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    expires TEXT NOT NULL
);
