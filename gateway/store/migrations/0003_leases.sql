-- 3: leases (the merge queue's lock, across processes); an intent's attempt; a task's last report digest
CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired TEXT NOT NULL, expires TEXT NOT NULL);
ALTER TABLE intents ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN report_digest TEXT;
