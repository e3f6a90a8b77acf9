-- 11: information-flow labels of each session (gateway/labels.py): what raised them, and the files the
-- session downloaded or decoded; a clean session has no row
CREATE TABLE flow_labels (
    session TEXT PRIMARY KEY,
    sources TEXT NOT NULL,
    files TEXT NOT NULL,
    updated TEXT NOT NULL
);
