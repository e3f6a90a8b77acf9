-- 5: where each reader of the ledger (the escalation notifier) has got to
CREATE TABLE cursors (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, tries INTEGER NOT NULL DEFAULT 0);
