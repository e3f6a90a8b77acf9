-- 10: the review index (gateway/store/repositories/review_index.py): a row per call and per trace, written with
-- each ledger row, so the review pages read what they show. Rows from before are indexed by catch_up, from the
-- cursor made here (at 0), a batch per transaction.
CREATE TABLE calls (
    call_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    final_seq INTEGER,
    time TEXT NOT NULL,
    kind TEXT NOT NULL,
    trace_id TEXT,
    agent TEXT,
    role TEXT,
    task TEXT,
    tool TEXT,
    outcome TEXT NOT NULL,
    action TEXT,
    tier INTEGER,
    approved INTEGER NOT NULL DEFAULT 0,
    unknown INTEGER NOT NULL DEFAULT 0,
    checkpoint INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX calls_seq ON calls (seq);
CREATE INDEX calls_time ON calls (time, seq);
CREATE INDEX calls_trace ON calls (trace_id, seq, agent, role, tool);
CREATE INDEX calls_agent ON calls (agent, seq);
CREATE INDEX calls_role ON calls (role, seq);
CREATE INDEX calls_task ON calls (task, seq);
CREATE INDEX calls_tool ON calls (tool, seq);
CREATE INDEX calls_outcome ON calls (outcome, seq);
CREATE INDEX calls_action ON calls (action, seq);
CREATE INDEX calls_approved ON calls (approved, seq);
CREATE INDEX calls_tier ON calls (tier, seq);
CREATE INDEX calls_kind ON calls (kind, seq);
CREATE TABLE call_rules (rule TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (rule, seq));
CREATE TABLE call_counts (
    day TEXT NOT NULL,
    kind TEXT NOT NULL,
    agent TEXT NOT NULL,
    role TEXT NOT NULL,
    tool TEXT NOT NULL,
    tier INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    action TEXT NOT NULL,
    approved INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (day, kind, agent, role, tool, tier, outcome, action, approved)
);
CREATE INDEX call_rules_seq ON call_rules (seq);
CREATE TABLE trace_summaries (
    trace_id TEXT PRIMARY KEY,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    first TEXT NOT NULL,
    last TEXT NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    refused INTEGER NOT NULL DEFAULT 0,
    asked INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    dry_runs INTEGER NOT NULL DEFAULT 0,
    unknown INTEGER NOT NULL DEFAULT 0,
    checkpoints INTEGER NOT NULL DEFAULT 0,
    side_effects TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX trace_summaries_order ON trace_summaries ((refused = 0), (asked = 0), last_seq DESC);
CREATE TABLE trace_steps (
    trace_id TEXT NOT NULL, seq INTEGER NOT NULL, approval_id TEXT, call_id TEXT, PRIMARY KEY (trace_id, seq)
);
CREATE INDEX trace_steps_approval ON trace_steps (approval_id);
CREATE INDEX trace_steps_call ON trace_steps (call_id);
CREATE INDEX tasks_trace ON tasks (trace_id);
CREATE INDEX ledger_kind ON ledger (json_extract(body, '$.kind'), seq);
INSERT INTO cursors (name, seq, tries) VALUES ('review-index', 0, 0) ON CONFLICT (name) DO UPDATE SET seq = 0;
