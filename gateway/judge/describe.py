"""Describe: arguments become Effects (gateway/effects/), once the call is situated in its task."""

from __future__ import annotations

from typing import Protocol

import anyio

from gateway.effects.describe import describe
from gateway.errors import DecisionDeadline
from gateway.judge.call import Call

__all__ = ["Describe", "Situating"]

INLINE_DESCRIPTION_CHARS = 2048  # shell text shorter than this is described on the event loop


class Situating(Protocol):
    """Fills in where the call happens (gateway/judge/situate.py): ``call.workspace``, ``call.task`` and
    ``call.intent`` for the policy, ``call.trace_id`` and ``call.confinement``."""

    def __call__(self, call: Call) -> None: ...


class Describe:
    """Arguments become Effects. Built-in tools can act only inside the workspace, so a path argument
    that leaves it is refused here, before the policy is asked about something that could never run.

    A long shell command is described in a worker thread, bounded by ``deadline_s``: one that takes longer
    is refused rather than holding up the event loop, and every other agent with it. A short one (most of
    them) is described in place: the analysis is linear and bounded, so it cannot take long, and the
    thread hop would cost more than the description."""

    def __init__(self, situate: Situating, deadline_s: float = 0.5) -> None:
        self.situate = situate
        self.deadline_s = deadline_s

    async def __call__(self, call: Call) -> None:
        assert call.spec is not None and call.principal is not None
        self.situate(call)
        assert call.workspace is not None
        if not call.spec.provider.upstream:
            for name, role in call.spec.argument_roles.items():
                if role in ("read", "write", "delete"):
                    value = call.arguments.get(name)
                    for raw in value if isinstance(value, list) else [value]:
                        if isinstance(raw, str):
                            call.workspace.resolve(raw)
        commands = [call.arguments.get(k) for k, role in call.spec.argument_roles.items() if role == "command"]
        if sum(len(c) for c in commands if isinstance(c, str)) < INLINE_DESCRIPTION_CHARS:
            call.effects = describe(call.spec, call.arguments, call.workspace)
            return
        spec, arguments, workspace = call.spec, call.arguments, call.workspace
        with anyio.move_on_after(self.deadline_s) as scope:
            call.effects = await anyio.to_thread.run_sync(
                lambda: describe(spec, arguments, workspace), abandon_on_cancel=True
            )
        if scope.cancelled_caught:
            raise DecisionDeadline(f"the command could not be analysed within {self.deadline_s:g} s; it is refused")
