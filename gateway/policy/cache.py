"""The decision cache: an identical decision input gets the decision already made.

It wraps any ``PolicyEngine`` (composition, as Starlette wraps an app in middleware). The key is the policy
revision in force (the policy files and the roles) plus the whole input document except its volatile
fields, ``context.time`` and ``context.trace_id``, which are left out by construction. So the principal,
tool, arguments, effects, task (state, claim, workers, attempt, last verification ...) and intent are all
in it: an edit of the policy files or of a role changes the revision, and a task or claim change changes
the input, so none can meet an entry made before it. Time is the one fact left out of the key, so an
entry lives no longer than

- ``policy.cache_ttl_s`` (a policy that reads the clock for anything else sees its decisions that late),
- the claim the input shows (``task.claim.expires_at``): a decision about a live claim ends with it,
- the credential (``principal.exp``).

Engine errors and missed deadlines are not cached: they say nothing about the input. Roles are the policy's
data (``data.roles``): the revision names them too (gateway/policy/bundle.py), so a role edit, like a policy
edit, changes the revision and no decision made under the old roles is served again.

    engine = DecisionCache(IsolatedEngine(path, data, workers=2, deadline_s=0.5), ttl_s=30.0, size=4096)
    decision = await engine.decide(input_doc)     # the engine's, or the one it gave for the same facts
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.digests import canonical_json
from gateway.policy.engine import PolicyEngine
from gateway.types import Decision, JSONObject

VOLATILE_CONTEXT = frozenset({"time", "trace_id"})
UNCACHED_RULES = frozenset({"engine.error", "gateway.decision_deadline"})


def cache_key(revision: str, input_doc: JSONObject) -> str:
    context = {k: v for k, v in (input_doc.get("context") or {}).items() if k not in VOLATILE_CONTEXT}
    facts = canonical_json({**input_doc, "context": context})
    return hashlib.sha256(f"{revision}\n{facts}".encode()).hexdigest()


def lifetime(input_doc: JSONObject, now: float, ttl_s: float) -> float:
    """Until when (epoch seconds) a decision about this input may be served again."""
    until = now + ttl_s
    claim = (input_doc.get("task") or {}).get("claim") or {}
    if claim.get("expires_at"):
        until = min(until, _epoch(claim["expires_at"]))
    exp = (input_doc.get("principal") or {}).get("exp")
    if isinstance(exp, int | float):
        until = min(until, float(exp))
    return until


@dataclass(frozen=True)
class Entry:
    decision: Decision
    until: float


class DecisionCache:
    def __init__(self, engine: PolicyEngine, ttl_s: float, size: int, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.name = engine.name
        self.ttl_s = ttl_s
        self.size = size
        self.clock = clock  # wall clock: claims and credentials expire in wall-clock time
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, Entry] = OrderedDict()

    async def decide(self, input_doc: JSONObject) -> Decision:
        key = cache_key(self.engine.revision(), input_doc)
        now = self.clock()
        entry = self._entries.get(key)
        if entry is not None and entry.until > now:
            self._entries.move_to_end(key)
            self.hits += 1
            return entry.decision
        self.misses += 1
        decision = await self.engine.decide(input_doc)
        if not UNCACHED_RULES.intersection(decision.rules):
            self._entries[key] = Entry(decision, lifetime(input_doc, now, self.ttl_s))
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return decision

    async def query(self, rule: str, input_doc: JSONObject) -> Any:
        return await self.engine.query(rule, input_doc)

    def revision(self) -> str:
        return self.engine.revision()

    def status(self) -> JSONObject:
        cache = {"entries": len(self._entries), "hits": self.hits, "misses": self.misses, "ttl_s": self.ttl_s}
        return {**self.engine.status(), "cache": cache}

    def start(self) -> None:
        self.engine.start()

    async def aclose(self) -> None:
        await self.engine.aclose()


def _epoch(text: str) -> float:
    try:
        return datetime.fromisoformat(text).timestamp()
    except (TypeError, ValueError):
        return 0.0  # a claim expiry that does not parse: never served from the cache
