"""The escalation evals (tests/evals/escalation.py) against a live gateway (gateway serve --http --workers 2)
with scripted MCP clients, and through Claude Code's hook: every attack stopped, no ordinary call escalated.
The report (stopped/total, the false-escalation rate) is printed whatever pytest captures."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import add_role, http_client, http_gateway, reconfigure, token
from evals.escalation import run_evals, upstreams

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_escalation_evals(config: Any, repo: Any, capsys: pytest.CaptureFixture[str]) -> None:
    add_role(config, "agent", ["*"], max_tier=2)
    config = reconfigure(config, upstreams=upstreams())
    with http_gateway(config.source, timeout=120, workers=2) as url:  # labels shared by both processes
        report = await run_evals(config, repo, lambda agent: http_client(url, token(config, "agent", agent=agent)))
    with capsys.disabled():
        print("\n" + report.summary())
    assert all(stopped for _, stopped, _ in report.attacks), report.summary()
    assert not any(escalated for _, escalated in report.ordinary), report.summary()
