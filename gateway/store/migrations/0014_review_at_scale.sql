-- 14: the review at a million calls (gateway/store/repositories/review_index.py): counts per rule key
-- (rule_counts: the groups of call_counts, each under a rule key), so the rule filter is a sum over groups, and
-- calls per block of ledger rows (call_blocks), so a page by number skips whole blocks. The index is derived:
-- emptied here and built again from the ledger by catch_up, with the new tables filled alike.
CREATE TABLE rule_counts (
    rule TEXT NOT NULL, day TEXT NOT NULL, kind TEXT NOT NULL, agent TEXT NOT NULL, role TEXT NOT NULL,
    tool TEXT NOT NULL, tier INTEGER NOT NULL, outcome TEXT NOT NULL, action TEXT NOT NULL,
    approved INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (rule, day, kind, agent, role, tool, tier, outcome, action, approved)
);
CREATE TABLE call_blocks (
    block INTEGER NOT NULL, dry INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (block, dry)
);
DELETE FROM calls;
DELETE FROM call_rules;
DELETE FROM call_counts;
DELETE FROM trace_summaries;
DELETE FROM trace_steps;
UPDATE cursors SET seq = 0 WHERE name = 'review-index';
