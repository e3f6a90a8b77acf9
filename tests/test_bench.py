"""The bench's helper code (bench/ is run by hand, never timed here): its command lines parse, the bare SDK
proxy forwards a call, and the /proc CPU meter counts the marked processes and only those."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from proc_cpu import ProcCpu, marked_env  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=str(ROOT))
# a child that uses at least 0.2 s of CPU, says so, then waits for its stdin to close
BURN = "import sys, time\nwhile time.process_time() < 0.2: pass\nprint('burnt', flush=True)\nsys.stdin.read()\n"


def test_the_bench_scripts_show_their_help() -> None:
    for script, words in [
        ("bench_gateway.py", "--only"),
        ("sdk_proxy.py", "--upstream"),
        ("bench_review.py", "--store"),
    ]:
        shown = subprocess.run(
            [sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True, env=ENV, timeout=120
        )
        assert shown.returncode == 0, shown.stderr
        assert words in shown.stdout


def test_bench_only_refuses_an_unknown_part() -> None:
    shown = subprocess.run(
        [sys.executable, str(BENCH / "bench_gateway.py"), "--only", "gw-http,nonsense"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert shown.returncode == 2 and "unknown nonsense" in shown.stderr


@pytest.mark.anyio
async def test_the_sdk_proxy_lists_and_forwards_the_upstream_tools() -> None:
    upstream = [sys.executable, str(ROOT / "tests" / "servers" / "echo_server.py")]
    argv = [str(BENCH / "sdk_proxy.py"), "--stdio", "--", *upstream]
    proxy = StdioServerParameters(command=sys.executable, args=argv)
    with anyio.fail_after(60):
        async with Client(proxy) as client:
            assert "echo" in {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("echo", {"text": "through the proxy"})
    assert not result.is_error and result.content[0].text == "through the proxy"  # type: ignore[union-attr]


def test_proc_cpu_counts_the_marked_processes_and_not_the_others() -> None:
    def burner(env: dict[str, str]) -> subprocess.Popen[str]:
        argv = [sys.executable, "-c", BURN]
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)

    meter = ProcCpu("test-group")
    before = meter.seconds()
    marked = burner(marked_env(dict(os.environ), "test-group"))
    other = burner(marked_env(dict(os.environ), "another-group"))
    try:
        for child in (marked, other):
            assert child.stdout is not None and child.stdout.readline() == "burnt\n"
        assert meter.pids() == [marked.pid]
        used = meter.seconds() - before
        assert used >= 0.2 - 2 / os.sysconf("SC_CLK_TCK")  # its CPU, to the clock tick; not the other's too
        assert used < 0.2 + ProcCpu("another-group").seconds()
    finally:
        for child in (marked, other):
            child.communicate(timeout=30)
