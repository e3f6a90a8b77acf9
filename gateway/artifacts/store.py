"""Versioned shared artifacts: content by key, each revision content-addressed (sha256), revisions per key that
only grow, every revision with its provenance. What agents share between tasks (notes, decisions, interface
sketches) without passing files through their worktrees.

- A put names the revision it was based on (0: a new key). A stale base fails with the current revision in the
  error; an unknown one fails too. Everything is checked and written in one store transaction.
- A put made within a task (its token, or its claim) stays on that task: the task reads it back, nobody else
  does, until the task's merge intent commits; then, in the transaction that records the commit, each key's
  last put becomes the next canonical revision, or, when the key moved past its base meanwhile, a conflict.
  A task that never commits (abandoned, blocked) never makes its puts canonical.
- A conflict holds only what resolving it needs: both revisions (the canonical one and the task's), their base,
  and provenance. A person (``gateway artifacts resolve``) or an arbitrating role (``artifact_resolve``)
  resolves it with content that becomes the next revision.

    artifacts = Artifacts(db, ledger, max_bytes=262144)
    artifacts.put("notes/design.md", "text", base=0, by=provenance)   # {"key", "revision": 1, "digest", ...}
    artifacts.get("notes/design.md", at_least=1)
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from typing import Any

from gateway.errors import GatewayError
from gateway.ledger.chain import Ledger, utc_now
from gateway.store import Store, Transaction, one_row
from gateway.types import JSONObject

__all__ = ["ArtifactConflict", "ArtifactRefused", "Artifacts", "check_key"]

# a namespace and a name: lower-case segments, no dot segments, nothing absolute, no way out of the namespace
KEY = re.compile(r"^[a-z0-9][a-z0-9_-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)+$")
MAX_KEY = 200


class ArtifactRefused(GatewayError):
    code = "artifact_refused"
    outcome = "invalid"


class ArtifactConflict(GatewayError):
    """A stale base: someone else's revision came first."""

    code = "artifact_conflict"


def check_key(key: str) -> str:
    if len(key) > MAX_KEY or not KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
        raise ArtifactRefused(
            f"artifact key {key[:80]!r} is not NAMESPACE/NAME (lower-case namespace, then name segments of "
            f"letters, digits, '.', '_' or '-'; no '.' or '..' segments, nothing absolute; at most {MAX_KEY} chars)"
        )
    return key


def content_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


class Artifacts:
    def __init__(self, db: Store, ledger: Ledger, max_bytes: int) -> None:
        self.db = db
        self.ledger = ledger
        self.max_bytes = max_bytes

    # --- writing -------------------------------------------------------------------------------------

    def put(self, key: str, content: str, base: int, by: JSONObject) -> JSONObject:
        """A new revision of ``key`` on ``base``: canonical at once, or staged on ``by["task"]`` when the put
        is made within a task. ``by`` is the provenance: agent, role, task, intent, trace."""
        check_key(key)
        size = len(content.encode("utf-8", "surrogatepass"))
        if size > self.max_bytes:
            raise ArtifactRefused(
                f"artifact {key!r} is {size} bytes; the limit is {self.max_bytes} (limits.max_artifact_bytes)"
            )
        if base < 0:
            raise ArtifactRefused(f"base revision {base} of {key!r}: revisions start at 1 (0: a new key)")
        digest = content_digest(content)
        with self.db.transaction() as tx:
            current = _latest(tx, key)
            if base > current:
                raise ArtifactRefused(
                    f"base revision {base} of {key!r} does not exist; the current revision is {current}"
                )
            if base < current:
                self._record(tx, "stale", key, by, base=base, current=current)
                raise ArtifactConflict(
                    f"stale base: {key!r} is at revision {current}, not {base}; get it, then put on it",
                    key=key,
                    current=current,
                    base=base,
                )
            if by.get("task"):
                put_id = "ap-" + secrets.token_hex(8)
                tx.execute(
                    "INSERT INTO artifact_puts (id, task_id, key, base, digest, content, provenance, state, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, 'staged', ?)",
                    (put_id, by["task"], key, base, digest, content, json.dumps(by), utc_now()),
                )
                self._record(tx, "staged", key, by, base=base, digest=digest, put=put_id)
                return {"key": key, "base": base, "digest": digest, "staged": True, "task": by["task"], "put": put_id}
            revision = self._insert(tx, key, current + 1, base, digest, content, by)
        return {"key": key, "revision": revision, "base": base, "digest": digest, "staged": False}

    def promote(self, tx: Transaction, task_id: str, intent_id: str) -> list[JSONObject]:
        """The task's merge committed (inside that transaction): each key's last staged put becomes canonical,
        or a conflict when the key moved past its base."""
        rows = tx.execute(
            "SELECT * FROM artifact_puts WHERE task_id = ? AND state = 'staged' ORDER BY created, id", (task_id,)
        ).fetchall()
        last: dict[str, Any] = {}
        for row in rows:
            last[row["key"]] = row
        done = []
        for key, row in last.items():
            by = {**json.loads(row["provenance"]), "intent": intent_id}
            current = _latest(tx, key)
            if current == row["base"]:
                revision = self._insert(tx, key, current + 1, row["base"], row["digest"], row["content"], by)
                tx.execute(
                    "UPDATE artifact_puts SET state = 'canonical', revision = ? WHERE id = ?", (revision, row["id"])
                )
                done.append({"key": key, "revision": revision})
            else:
                conflict = "ac-" + secrets.token_hex(6)
                tx.execute(
                    "INSERT INTO artifact_conflicts (id, key, base, current, put_id, state, created)"
                    " VALUES (?, ?, ?, ?, ?, 'open', ?)",
                    (conflict, key, row["base"], current, row["id"], utc_now()),
                )
                tx.execute("UPDATE artifact_puts SET state = 'conflict' WHERE id = ?", (row["id"],))
                self._record(tx, "conflict", key, by, base=row["base"], current=current, conflict=conflict)
                done.append({"key": key, "conflict": conflict})
        tx.execute("UPDATE artifact_puts SET state = 'superseded' WHERE task_id = ? AND state = 'staged'", (task_id,))
        return done

    def resolve(self, conflict_id: str, content: str, by: JSONObject) -> JSONObject:
        """A conflict resolved: ``content`` becomes the key's next revision, naming the conflict it resolves."""
        with self.db.transaction() as tx:
            row = tx.execute("SELECT * FROM artifact_conflicts WHERE id = ?", (conflict_id,)).fetchone()
            if row is None:
                raise ArtifactRefused(f"no artifact conflict {conflict_id[:40]!r}")
            if row["state"] != "open":
                raise ArtifactRefused(f"conflict {conflict_id} is already resolved (revision {row['resolution']})")
            size = len(content.encode("utf-8", "surrogatepass"))
            if size > self.max_bytes:
                raise ArtifactRefused(f"the resolution is {size} bytes; the limit is {self.max_bytes}")
            current = _latest(tx, row["key"])
            provenance = {**by, "resolves": conflict_id}
            revision = self._insert(tx, row["key"], current + 1, current, content_digest(content), content, provenance)
            tx.execute(
                "UPDATE artifact_conflicts SET state = 'resolved', resolved_by = ?, resolution = ?, updated = ?"
                " WHERE id = ?",
                (by.get("agent"), revision, utc_now(), conflict_id),
            )
        return {"key": row["key"], "revision": revision, "resolves": conflict_id}

    # --- reading -------------------------------------------------------------------------------------

    def get(
        self, key: str, revision: int | None = None, at_least: int | None = None, task: str | None = None
    ) -> JSONObject:
        """One revision: exact, or the latest (at least ``at_least``: never an older one). Within a task, the
        task's own last put of the key comes first (read-your-writes)."""
        check_key(key)
        if task and revision is None:
            staged = self.db.query(
                "SELECT * FROM artifact_puts WHERE task_id = ? AND key = ? AND state = 'staged'"
                " ORDER BY created DESC, id DESC LIMIT 1",
                (task, key),
            )
            if staged and (at_least is None or staged[0]["base"] >= at_least - 1):
                row = staged[0]
                return {
                    "key": key,
                    "base": row["base"],
                    "digest": row["digest"],
                    "content": row["content"],
                    "staged": True,
                    "provenance": json.loads(row["provenance"]),
                }
        latest = self.latest(key)
        wanted = revision if revision is not None else latest
        if at_least is not None and latest < at_least:
            raise ArtifactRefused(f"{key!r} has no revision {at_least} yet (the latest is {latest}); ask again later")
        rows = self.db.query("SELECT * FROM artifacts WHERE key = ? AND revision = ?", (key, wanted))
        if not rows:
            raise ArtifactRefused(f"{key!r} has no revision {wanted} (the latest is {latest})")
        return _revision(rows[0], content=True)

    def latest(self, key: str) -> int:
        return int(self.db.query("SELECT COALESCE(MAX(revision), 0) FROM artifacts WHERE key = ?", (key,))[0][0])

    def log(self, key: str) -> JSONObject:
        """Every revision of ``key`` (newest first, without content) and its conflicts."""
        check_key(key)
        rows = self.db.query("SELECT * FROM artifacts WHERE key = ? ORDER BY revision DESC", (key,))
        return {"key": key, "revisions": [_revision(r) for r in rows], "conflicts": self.conflicts(key)}

    def conflicts(self, key: str | None = None, state: str | None = None) -> list[JSONObject]:
        where, params = "1=1", []
        if key:
            where, params = where + " AND c.key = ?", [key]
        if state:
            where, params = where + " AND c.state = ?", [*params, state]
        rows = self.db.query(
            "SELECT c.*, p.digest AS put_digest, p.provenance AS put_provenance FROM artifact_conflicts c"
            f" JOIN artifact_puts p ON p.id = c.put_id WHERE {where} ORDER BY c.created",
            params,
        )
        return [self._conflict(r) for r in rows]

    def conflict(self, conflict_id: str) -> JSONObject:
        """Only what resolving it needs: both revisions, their base, and provenance."""
        found = [c for c in self.conflicts() if c["id"] == conflict_id]
        if not found:
            raise ArtifactRefused(f"no artifact conflict {conflict_id[:40]!r}")
        conflict = found[0]
        put = self.db.query("SELECT content FROM artifact_puts WHERE id = ?", (conflict["put"],))[0]
        base = self.get(conflict["key"], revision=conflict["base"]) if conflict["base"] else None
        return {
            **conflict,
            "base_content": base["content"] if base else None,
            "current_content": self.get(conflict["key"], revision=conflict["current"]["revision"])["content"],
            "theirs_content": put["content"],
        }

    def for_trace(self, trace_id: str) -> list[JSONObject]:
        """The artifact steps recorded in a trace (puts, promotions, conflicts)."""
        return [
            e.detail
            for e in self.ledger.events(
                "json_extract(body, '$.kind') = 'artifact' AND json_extract(body, '$.trace_id') = ?", (trace_id,)
            )
        ]

    # --- helpers -------------------------------------------------------------------------------------

    def _insert(
        self, tx: Transaction, key: str, revision: int, base: int, digest: str, content: str, by: JSONObject
    ) -> int:
        tx.execute(
            "INSERT INTO artifacts (key, revision, digest, content, base, provenance, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, revision, digest, content, base, json.dumps(by), utc_now()),
        )
        self._record(tx, "revision", key, by, revision=revision, base=base, digest=digest)
        return revision

    def _conflict(self, row: Any) -> JSONObject:
        current = self.db.query(
            "SELECT digest, provenance FROM artifacts WHERE key = ? AND revision = ?", (row["key"], row["current"])
        )
        return {
            "id": row["id"],
            "key": row["key"],
            "state": row["state"],
            "base": row["base"],
            "current": {
                "revision": row["current"],
                "digest": current[0]["digest"] if current else None,
                "provenance": json.loads(current[0]["provenance"]) if current else None,
            },
            "theirs": {"digest": row["put_digest"], "provenance": json.loads(row["put_provenance"])},
            "put": row["put_id"],
            "resolution": row["resolution"],
            "resolved_by": row["resolved_by"],
        }

    def _record(self, tx: Transaction, action: str, key: str, by: JSONObject, **detail: Any) -> None:
        self.ledger.append_in(
            tx,
            {
                "kind": "artifact",
                "tool": f"artifact.{action}",
                "trace_id": by.get("trace"),
                "principal": {k: by.get(k) for k in ("agent", "role", "task")},
                "outcome": "error" if action in ("stale", "conflict") else "ok",
                "detail": {"action": action, "key": key, **detail},
            },
        )


def _latest(tx: Transaction, key: str) -> int:
    return int(one_row(tx.execute("SELECT COALESCE(MAX(revision), 0) FROM artifacts WHERE key = ?", (key,)))[0])


def _revision(row: Any, content: bool = False) -> JSONObject:
    found = {
        "key": row["key"],
        "revision": row["revision"],
        "base": row["base"],
        "digest": row["digest"],
        "provenance": json.loads(row["provenance"]),
        "time": row["created"],
    }
    return {**found, "content": row["content"]} if content else found
