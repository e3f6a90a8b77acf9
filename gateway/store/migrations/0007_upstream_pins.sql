-- 7: pins of upstream definitions (gateway/tools/pins.py), the changes waiting for a person, and which
-- lockfile entry each locked upstream was last imported from
CREATE TABLE upstream_pins (
    upstream TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    exposed TEXT NOT NULL,
    digest TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    definition TEXT NOT NULL,
    source TEXT NOT NULL,
    pinned_by TEXT NOT NULL,
    pinned_at TEXT NOT NULL,
    PRIMARY KEY (upstream, kind, name)
);
CREATE TABLE upstream_changes (
    upstream TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    exposed TEXT NOT NULL,
    status TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    definition TEXT NOT NULL,
    renamed_from TEXT,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    PRIMARY KEY (upstream, kind, name, digest)
);
CREATE TABLE upstream_locks (upstream TEXT PRIMARY KEY, lock_digest TEXT NOT NULL, imported_at TEXT NOT NULL);
