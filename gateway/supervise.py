"""A background loop the gateway keeps running: a failure is logged and recorded, and the loop goes on after a
backoff instead of taking the gateway down with it (one StoreUnavailable during a claim sweep once stopped
the gateway).

    sweeps = Supervised("claim sweep", board_sweep, every_s=5.0, ledger=ledger)
    tg.start_soon(sweeps.run)

Each pass runs ``every_s`` after the last; after a failure the wait doubles (up to ``max_backoff_s``) until a
pass succeeds. The error is recorded with anything that looks like a credential masked. The first failure of a
run of them is recorded in the ledger (kind "loop", outcome "error");
when the ledger cannot take it (the store itself is what failed), it is recorded with the recovery (outcome
"ok", how many passes failed and the last error), so the record is complete once the store is back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import structlog

from gateway.decision_log import mask_text
from gateway.ledger.chain import Ledger, utc_now
from gateway.types import JSONObject

__all__ = ["Supervised"]

log = structlog.get_logger("gateway.supervise")

MAX_BACKOFF_S = 60.0


@dataclass
class _Streak:
    """A run of failed passes: since when, how many, the last error, and whether its first is recorded."""

    since: str
    failures: int
    error: str
    recorded: bool


class Supervised:
    """Runs ``step`` every ``every_s`` seconds, forever, surviving its failures (see the module docstring)."""

    def __init__(
        self,
        name: str,
        step: Callable[[], Awaitable[object]],
        every_s: float,
        ledger: Ledger,
        max_backoff_s: float = MAX_BACKOFF_S,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self.name = name
        self.step = step
        self.every_s = every_s
        self.ledger = ledger
        self.max_backoff_s = max(max_backoff_s, every_s)
        self.sleep = sleep  # the clock: a test can make the passes come when it says
        self.streak: _Streak | None = None

    async def run(self) -> None:
        while True:
            await self.sleep(self.wait_s)
            await self.once()

    @property
    def wait_s(self) -> float:
        """Until the next pass: ``every_s``, doubled for each failure of the current run of them (capped)."""
        failures = self.streak.failures if self.streak is not None else 0
        return min(self.every_s * 2 ** min(failures, 16), self.max_backoff_s)

    async def once(self) -> None:
        """One pass, its failure (any Exception) caught, logged and recorded."""
        try:
            await self.step()
        except Exception as exc:
            error = mask_text(f"{type(exc).__name__}: {str(exc)[:300]}")  # what looks like a credential masked
            streak = self.streak or _Streak(utc_now(), 0, error, recorded=False)
            streak.failures, streak.error = streak.failures + 1, error
            self.streak = streak
            log.exception("a background loop failed; it goes on", loop=self.name, error=error, failures=streak.failures)
            if not streak.recorded:
                streak.recorded = self._record("error", {"error": error, "retry_in_s": self.wait_s})
            return
        ended, self.streak = self.streak, None
        if ended is not None:
            log.warning("a background loop recovered", loop=self.name, failures=ended.failures)
            facts = {"recovered_after": ended.failures, "failing_since": ended.since, "last_error": ended.error}
            self._record("ok", facts)

    def _record(self, outcome: str, detail: JSONObject) -> bool:
        """A ledger row about the loop; False when the ledger could not take it (then the log has it)."""
        try:
            self.ledger.append({"kind": "loop", "tool": self.name, "outcome": outcome, "detail": detail})
        except Exception:
            log.exception("could not record a background loop's state", loop=self.name)
            return False
        return True
