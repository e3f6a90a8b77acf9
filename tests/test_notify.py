"""Escalation notices: a real HTTP webhook receives blocked, abandoned, expired and dead-lettered work, in
ledger order, at least once, with the webhook's secret header from the environment and no payloads."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import ledger_rows, reconfigure, token
from test_deadletters import MARKER, claimed_with_a_change, record, report
from test_merge_queue import call, started, submit

pytestmark = pytest.mark.anyio

CHECK = ["grep -q 'return 42' src/app.py"]


class Receiver:
    """A webhook on 127.0.0.1: keeps what it is sent; answers ``status`` (500 plays a webhook that is down)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.status = 200

    @contextmanager
    def serving(self) -> Iterator[str]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.status == 200:
                    receiver.bodies.append(json.loads(body))
                    receiver.headers.append(dict(self.headers))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/hook"
        finally:
            server.shutdown()
            server.server_close()


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    hook = Receiver()
    with hook.serving() as url:
        yield hook, url


def notifying(config: Any, url: str, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> Any:
    monkeypatch.setenv("HOOK_SECRET", "s3cret-value")
    # interval_s: the test delivers by hand, one pass at a time; the background loop never fires
    notify = {"webhooks": [{"url": url, "headers": {"X-Hook-Secret": "${HOOK_SECRET}"}}], "interval_s": 3600, **extra}
    return reconfigure(config, notify=notify)


async def test_expiry_and_abandonment_reach_the_webhook_once_in_order(
    config: Any, repo: Path, receiver: tuple[Receiver, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hook, url = receiver
    config = notifying(config, url, monkeypatch)
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], CHECK)
        await submit(gateway, "T2", ["docs/**"], ["test -f docs/x"], depends_on=["T1"])
        await call(gateway, token(config, "worker", agent="w1"), "task_claim", {"task_id": "T1"})
        later = datetime.now(UTC) + timedelta(seconds=config.tasks.claim_ttl_s + 1)
        assert gateway.board.sweep(now=later) == ["T1"]
        gateway.board.abandon("T1", by="alice", why="the approach is wrong")

        sent = await gateway.notifier.deliver()
        assert [(n["event"], n["task_id"]) for n in sent] == [
            ("claim_expired", "T1"),
            ("abandon", "T1"),
            ("dependency_failed", "T2"),
            ("blocker_report", "T2"),
        ]
        assert hook.bodies == sent
        assert sent[0]["agent"] == "w1" and "the approach is wrong" in sent[1]["text"]
        assert all(h["X-Hook-Secret"] == "s3cret-value" for h in hook.headers)
        assert await gateway.notifier.deliver() == []  # the cursor moved past them: sent once

    async with started(config) as gateway:  # a restart resumes from the stored cursor
        assert await gateway.notifier.deliver() == []
    assert "s3cret-value" not in "\n".join(r["body"] for r in gateway.db.query("SELECT body FROM ledger"))


async def test_a_webhook_that_is_down_is_retried_then_given_up_and_recorded(
    config: Any, repo: Path, receiver: tuple[Receiver, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hook, url = receiver
    config = notifying(config, url, monkeypatch, max_tries=2)
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], CHECK)
        gateway.board.abandon("T1", by="alice", why="first")
        hook.status = 500
        assert await gateway.notifier.deliver() == []  # refused: kept for the next pass
        hook.status = 200
        assert [n["why"] for n in await gateway.notifier.deliver()] == ["first"]

        await submit(gateway, "T2", ["src/**"], CHECK)
        gateway.board.abandon("T2", by="alice", why="second")
        await submit(gateway, "T3", ["src/**"], CHECK)
        gateway.board.abandon("T3", by="alice", why="third")
        hook.status = 500
        assert await gateway.notifier.deliver() == []
        assert await gateway.notifier.deliver() == []  # second try: given up on T2's notice, recorded
        hook.status = 200
        assert [n["task_id"] for n in await gateway.notifier.deliver()] == ["T3"]  # order kept, nothing stuck
        dropped = ledger_rows(gateway, kind="notify")
        assert len(dropped) == 1 and dropped[0].detail["notice"]["task_id"] == "T2"
        assert "HTTP 500" in dropped[0].detail["error"]


async def test_a_dead_letter_is_noticed_without_its_payload(
    config: Any, repo: Path, receiver: tuple[Receiver, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hook, url = receiver
    config = notifying(config, url, monkeypatch, events=["dead_letter"])
    async with started(config) as gateway:
        await claimed_with_a_change(gateway, config)
        _, deadletter_id = await report(gateway, config, {"record": record(status="finished")})
        sent = await gateway.notifier.deliver()
        assert [n["event"] for n in sent] == ["dead_letter"]  # only the events asked for
        assert deadletter_id in sent[0]["why"] and sent[0]["agent"] == "w1"
        assert MARKER not in json.dumps(hook.bodies)
