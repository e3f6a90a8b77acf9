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
from gateway.store import Store, Transaction
from gateway.store.repositories import artifacts
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
            current = artifacts.latest_in(tx, key)
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
                staged = artifacts.Put(
                    put_id, by["task"], key, base, digest, content, json.dumps(by), "staged", None, utc_now()
                )
                artifacts.stage(tx, staged)
                self._record(tx, "staged", key, by, base=base, digest=digest, put=put_id)
                return {"key": key, "base": base, "digest": digest, "staged": True, "task": by["task"], "put": put_id}
            revision = self._insert(tx, key, current + 1, base, digest, content, by)
        return {"key": key, "revision": revision, "base": base, "digest": digest, "staged": False}

    def promote(self, tx: Transaction, task_id: str, intent_id: str) -> list[JSONObject]:
        """The task's merge committed (inside that transaction): each key's last staged put becomes canonical,
        or a conflict when the key moved past its base."""
        last = {row.key: row for row in artifacts.staged_in(tx, task_id)}
        done = []
        for key, row in last.items():
            by = {**json.loads(row.provenance), "intent": intent_id}
            current = artifacts.latest_in(tx, key)
            if current == row.base:
                revision = self._insert(tx, key, current + 1, row.base, row.digest, row.content, by)
                artifacts.set_put_state(tx, row.id, "canonical", revision)
                done.append({"key": key, "revision": revision})
            else:
                conflict = "ac-" + secrets.token_hex(6)
                opened = artifacts.Conflict(
                    conflict, key, row.base, current, row.id, "open", None, None, utc_now(), None
                )
                artifacts.add_conflict(tx, opened)
                artifacts.set_put_state(tx, row.id, "conflict")
                self._record(tx, "conflict", key, by, base=row.base, current=current, conflict=conflict)
                done.append({"key": key, "conflict": conflict})
        artifacts.supersede_staged(tx, task_id)
        return done

    def resolve(self, conflict_id: str, content: str, by: JSONObject) -> JSONObject:
        """A conflict resolved: ``content`` becomes the key's next revision, naming the conflict it resolves."""
        with self.db.transaction() as tx:
            row = artifacts.conflict_in(tx, conflict_id)
            if row is None:
                raise ArtifactRefused(f"no artifact conflict {conflict_id[:40]!r}")
            if row.state != "open":
                raise ArtifactRefused(f"conflict {conflict_id} is already resolved (revision {row.resolution})")
            size = len(content.encode("utf-8", "surrogatepass"))
            if size > self.max_bytes:
                raise ArtifactRefused(f"the resolution is {size} bytes; the limit is {self.max_bytes}")
            current = artifacts.latest_in(tx, row.key)
            provenance = {**by, "resolves": conflict_id}
            revision = self._insert(tx, row.key, current + 1, current, content_digest(content), content, provenance)
            artifacts.resolve_conflict(tx, conflict_id, by.get("agent"), revision, utc_now())
        return {"key": row.key, "revision": revision, "resolves": conflict_id}

    # --- reading -------------------------------------------------------------------------------------

    def get(
        self, key: str, revision: int | None = None, at_least: int | None = None, task: str | None = None
    ) -> JSONObject:
        """One revision: exact, or the latest (at least ``at_least``: never an older one). Within a task, the
        task's own last put of the key comes first (read-your-writes)."""
        check_key(key)
        if task and revision is None:
            staged = artifacts.last_staged(self.db, task, key)
            if staged is not None and (at_least is None or staged.base >= at_least - 1):
                return {
                    "key": key,
                    "base": staged.base,
                    "digest": staged.digest,
                    "content": staged.content,
                    "staged": True,
                    "provenance": json.loads(staged.provenance),
                }
        latest = self.latest(key)
        wanted = revision if revision is not None else latest
        if at_least is not None and latest < at_least:
            raise ArtifactRefused(f"{key!r} has no revision {at_least} yet (the latest is {latest}); ask again later")
        found = artifacts.revision(self.db, key, wanted)
        if found is None:
            raise ArtifactRefused(f"{key!r} has no revision {wanted} (the latest is {latest})")
        return _revision(found, content=True)

    def latest(self, key: str) -> int:
        return artifacts.latest(self.db, key)

    def log(self, key: str) -> JSONObject:
        """Every revision of ``key`` (newest first, without content) and its conflicts."""
        check_key(key)
        revisions = [_revision(r) for r in artifacts.revisions(self.db, key)]
        return {"key": key, "revisions": revisions, "conflicts": self.conflicts(key)}

    def conflicts(self, key: str | None = None, state: str | None = None) -> list[JSONObject]:
        return [self._conflict(r) for r in artifacts.conflicts(self.db, key, state)]

    def conflict(self, conflict_id: str) -> JSONObject:
        """Only what resolving it needs: both revisions, their base, and provenance."""
        found = [c for c in self.conflicts() if c["id"] == conflict_id]
        if not found:
            raise ArtifactRefused(f"no artifact conflict {conflict_id[:40]!r}")
        conflict = found[0]
        put = artifacts.put(self.db, conflict["put"])
        assert put is not None  # a conflict's put is never removed
        base = self.get(conflict["key"], revision=conflict["base"]) if conflict["base"] else None
        return {
            **conflict,
            "base_content": base["content"] if base else None,
            "current_content": self.get(conflict["key"], revision=conflict["current"]["revision"])["content"],
            "theirs_content": put.content,
        }

    def for_trace(self, trace_id: str) -> list[JSONObject]:
        """The artifact steps recorded in a trace (puts, promotions, conflicts)."""
        return [e.detail for e in self.ledger.of_kind("artifact", trace_id=trace_id)]

    # --- helpers -------------------------------------------------------------------------------------

    def _insert(
        self, tx: Transaction, key: str, revision: int, base: int, digest: str, content: str, by: JSONObject
    ) -> int:
        artifacts.add_revision(tx, artifacts.Revision(key, revision, digest, content, base, json.dumps(by), utc_now()))
        self._record(tx, "revision", key, by, revision=revision, base=base, digest=digest)
        return revision

    def _conflict(self, row: artifacts.ListedConflict) -> JSONObject:
        current = artifacts.revision(self.db, row.key, row.current)
        return {
            "id": row.id,
            "key": row.key,
            "state": row.state,
            "base": row.base,
            "current": {
                "revision": row.current,
                "digest": current.digest if current else None,
                "provenance": json.loads(current.provenance) if current else None,
            },
            "theirs": {"digest": row.put_digest, "provenance": json.loads(row.put_provenance)},
            "put": row.put_id,
            "resolution": row.resolution,
            "resolved_by": row.resolved_by,
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


def _revision(row: artifacts.Revision, content: bool = False) -> JSONObject:
    found = {
        "key": row.key,
        "revision": row.revision,
        "base": row.base,
        "digest": row.digest,
        "provenance": json.loads(row.provenance),
        "time": row.created,
    }
    return {**found, "content": row.content} if content else found
