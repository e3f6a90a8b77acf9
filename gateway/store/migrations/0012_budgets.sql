-- 12: budgets (gateway/budgets.py): each scope's counts in its window and its token bucket
CREATE TABLE budgets (
    scope TEXT PRIMARY KEY,
    window_start DOUBLE PRECISION NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    tier2 INTEGER NOT NULL DEFAULT 0,
    tier3 INTEGER NOT NULL DEFAULT 0,
    egress_bytes BIGINT NOT NULL DEFAULT 0,
    wall_ms BIGINT NOT NULL DEFAULT 0,
    tokens DOUBLE PRECISION,
    refilled DOUBLE PRECISION NOT NULL
);
