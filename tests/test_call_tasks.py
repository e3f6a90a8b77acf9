"""Long calls as 2026-07-28 tasks (gateway/call_tasks.py): a real SDK client that declares the tasks extension
gets a task for verify_run and polls it to the answer; a task a stopped gateway left working is failed on
the next start, naming its call. The Python SDK has no tasks client (only the TypeScript ext-tasks package
has), so the test sends tools/call and tasks/get through the SDK session's own stamp and dispatcher."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import anyio
import pytest
from conftest import inproc_client, ledger_rows, token
from mcp.client.extension import advertise
from test_tasks import record, submit

from gateway.call_tasks import EXTENSION
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio


async def raw(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request as the client's session sends any (its era's envelope), its result as the server sent it."""
    data: dict[str, Any] = {"method": method, "params": params}
    options: dict[str, Any] = {}
    client.session._stamp(data, options)
    result: dict[str, Any] = await client.session._dispatcher.send_raw_request(method, data["params"], options)
    return result


async def reported(gateway: Gateway, config: Any) -> None:
    await submit(gateway, config)
    async with inproc_client(gateway, token(config, "worker", agent="w1")) as client:
        await client.call_tool("task_claim", {"task_id": "T1"})
        await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
        await client.call_tool("task_report", {"record": record()})


async def test_verify_run_answers_with_a_task_its_client_polls_to_the_result(gateway: Gateway, config: Any) -> None:
    await reported(gateway, config)
    verifier = token(config, "verifier", agent="v1")
    async with inproc_client(gateway, verifier, extensions=[advertise(EXTENSION, {})]) as client:
        assert client.protocol_version == "2026-07-28"
        assert EXTENSION in (client.server_capabilities.extensions or {})
        started = await raw(client, "tools/call", {"name": "verify_run", "arguments": {"task_id": "T1"}})
        assert started["resultType"] == "task" and started["status"] == "working"
        task_id = started["taskId"]
        with anyio.fail_after(60):
            while (task := await raw(client, "tasks/get", {"taskId": task_id}))["status"] == "working":
                await anyio.sleep(0.05)
    assert task["status"] == "completed", task
    assert task["result"]["structuredContent"]["passed"] is True
    assert gateway.board.get("T1")["state"] == "verified"
    (call,) = [r for r in ledger_rows(gateway) if r.tool == "verify_run" and r.outcome == "ok"]
    assert call.detail["task_id"] == task_id


async def test_another_agent_cannot_read_a_task(gateway: Gateway, config: Any) -> None:
    task = gateway.call_tasks.create("v1", "verify_run", "call-1")
    async with inproc_client(gateway, token(config, "verifier", agent="v2")) as client:
        with pytest.raises(Exception, match="is yours"):
            await raw(client, "tasks/get", {"taskId": task["taskId"]})


async def test_a_task_a_stopped_gateway_left_working_fails_on_the_next_start(gateway: Gateway) -> None:
    task = gateway.call_tasks.create("v1", "intent_commit", "call-7")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with gateway.db.transaction() as tx:  # as a process that has since died left it
        tx.execute("UPDATE call_tasks SET process = ?", (f"{socket.gethostname()}|{gone.stdout.strip()}",))
    async with gateway.running():
        pass
    after = gateway.call_tasks.get(task["taskId"], "v1")
    assert after is not None and after["status"] == "failed" and "call-7" in after["error"]["message"]
