-- 15: Claude Code's hook and MCP calls joined in the store (gateway/session_joins.py): a hook's tool_use_id, who
-- announced it and the tool it named, and the session's trace, so a restart, a replica or a worker process (and
-- a stdio server beside an HTTP one) joins the MCP call that names it. trace_id NULL: claimed twice, differently
CREATE TABLE session_joins (
    tool_use_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    role TEXT NOT NULL,
    task TEXT,
    hooked_tool TEXT NOT NULL,
    trace_id TEXT,
    expires DOUBLE PRECISION NOT NULL
);
CREATE INDEX session_joins_expires ON session_joins (expires);
