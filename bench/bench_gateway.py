"""What the gateway costs per call: latency and throughput through it versus calling the tool directly.

Run by hand (it is not a test, and nothing asserts on its numbers):

    .venv/bin/python bench/bench_gateway.py                      # the default run, well under a minute
    .venv/bin/python bench/bench_gateway.py --calls 500 --json   # longer, and the figures as JSON too

It sets up a scratch git repository and workspace (``gateway init``), a role allowed to call the test echo
upstream (tests/servers/echo_server.py, declared read-only so the policy decides tier 1) and ``fs_read``,
then runs each scenario with ``--clients`` concurrent MCP clients, each making ``--calls`` timed calls
after ``--warmup`` untimed ones:

    echo   direct              SDK client -> echo_server.py over stdio (the baseline)
    echo   gateway stdio       SDK client -> `gateway serve --stdio` (one process per client) -> echo upstream
    echo   gateway http        SDK clients -> one `gateway serve --http` (streamable HTTP) -> echo upstream
    fs_read pipeline inproc    the gateway's pipeline called in-process: no MCP transport at all
    fs_read gateway stdio/http the built-in tool through the gateway's real transports

The gateway runs as configured by default: embedded Rego engine, SQLite ledger, the decision log written
to <state_dir>/decisions.jsonl, OTLP export off. Last, the policy engine alone: decisions per second of
the embedded engine on a typical input (an fs_write of a new file by a developer), in 1 and 2 threads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.bootstrap import init_workspace  # noqa: E402
from gateway.config import GatewayConfig  # noqa: E402
from gateway.pipeline import Call  # noqa: E402
from gateway.process import free_port, start_server, stop_server  # noqa: E402
from gateway.repo import Repo  # noqa: E402
from gateway.telemetry import configure_logging  # noqa: E402
from gateway.types import Origin  # noqa: E402

ECHO = ROOT / "tests" / "servers" / "echo_server.py"
BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
for _name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "GATEWAY_TOKEN"):
    ENV.pop(_name, None)


# --- measuring --------------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    clients: int
    latencies: list[float]  # seconds, every timed call of every client
    wall: float  # seconds from the first timed call to the last answer
    errors: int = 0

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies) * 1000

    @property
    def p99_ms(self) -> float:
        return self.quantile(0.99) * 1000

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.wall

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.name,
            "clients": self.clients,
            "calls": len(self.latencies),
            "errors": self.errors,
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "calls_per_s": round(self.throughput, 1),
        }


CallFn = Callable[[], Awaitable[bool]]  # one call; True when the answer is not an error


async def drive(name: str, sessions: list[AbstractAsyncContextManager[CallFn]], calls: int, warmup: int) -> Result:
    """Open every session, warm each up, then start all clients at once and time every call."""
    latencies: list[float] = []
    errors = 0
    ready = 0
    start = anyio.Event()
    first: list[float] = []
    last: list[float] = []

    async def client(session: AbstractAsyncContextManager[CallFn]) -> None:
        nonlocal ready, errors
        async with session as call:
            for _ in range(warmup):
                if not await call():
                    raise RuntimeError(f"{name}: a warm-up call failed")
            ready += 1
            if ready == len(sessions):
                start.set()
            await start.wait()
            first.append(time.perf_counter())
            for _ in range(calls):
                began = time.perf_counter()
                ok = await call()
                latencies.append(time.perf_counter() - began)
                errors += not ok
            last.append(time.perf_counter())
            await ready_to_close.wait()  # keep every session open until all are done: no teardown in the timing

    ready_to_close = anyio.Event()
    async with anyio.create_task_group() as tg:
        for session in sessions:
            tg.start_soon(client, session)
        while len(last) < len(sessions):
            await anyio.sleep(0.01)
        ready_to_close.set()
    return Result(name, len(sessions), latencies, max(last) - min(first), errors)


class McpSession:
    """An SDK client session making one tools/call per ``call()``."""

    def __init__(self, open_client: Callable[[], Any], tool: str, arguments: dict[str, Any]) -> None:
        self.open_client = open_client
        self.tool = tool
        self.arguments = arguments
        self._stack: Any = None

    async def __aenter__(self) -> CallFn:
        self._stack = self.open_client()
        client = await self._stack.__aenter__()

        async def call() -> bool:
            result = await client.call_tool(self.tool, self.arguments)
            return not result.is_error

        return call

    async def __aexit__(self, *exc: Any) -> None:
        await self._stack.__aexit__(*exc)


class HttpClient:
    """An SDK client over streamable HTTP with a bearer token (its own HTTP connection pool)."""

    def __init__(self, url: str, bearer: str) -> None:
        self.url = url
        self.bearer = bearer

    async def __aenter__(self) -> Client:
        self._http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.bearer}"})
        http = await self._http.__aenter__()
        self._client = Client(streamable_http_client(f"{self.url}/mcp", http_client=http))
        return await self._client.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        await self._client.__aexit__(*exc)
        await self._http.__aexit__(*exc)


class InProcess:
    """The gateway's pipeline called directly, as the MCP server does after decoding a request."""

    def __init__(self, gateway: Any, bearer: str, tool: str, arguments: dict[str, Any], session: str) -> None:
        self.gateway = gateway
        self.origin = Origin(transport="inprocess", protocol_version="2026-07-28", token=bearer, session_id=session)
        self.tool = tool
        self.arguments = arguments

    async def __aenter__(self) -> CallFn:
        async def call() -> bool:
            result = await self.gateway.pipeline(
                Call(tool=self.tool, arguments=dict(self.arguments), origin=self.origin)
            )
            return not getattr(result, "is_error", False)

        return call

    async def __aexit__(self, *exc: Any) -> None:
        return None


# --- the workspace ----------------------------------------------------------------------------------


def workspace(base: Path) -> tuple[GatewayConfig, str]:
    repo = base / "repo"
    repo.mkdir(parents=True)
    git = Repo(repo)
    git.run("init", "-q", "-b", "main")
    (repo / "README.md").write_text("# bench repo\n" + "a line of text\n" * 50)
    git.run("add", "-A")
    git.run("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "initial")
    config = init_workspace(repo)
    assert config.source is not None
    role = {"name": "bench", "description": "benchmark role", "tools": ["echo__echo", "fs_read"], "max_tier": 1}
    (config.roles / "bench.yaml").write_text(yaml.safe_dump(role))
    raw = yaml.safe_load(config.source.read_text())
    raw["upstreams"] = {"echo": {"command": sys.executable, "args": [str(ECHO)], "env": {}, "read_only": ["echo"]}}
    config.source.write_text(yaml.safe_dump(raw))
    config = GatewayConfig.load(config.source)
    from gateway.runtime import Gateway

    bearer = Gateway(config).tokens.issue(role="bench", agent="bench", ttl_s=3600)[0]
    return config, bearer


def stdio_gateway(config: GatewayConfig, bearer: str) -> StdioServerParameters:
    args = ["-m", "gateway", "--config", str(config.source), "serve", "--stdio", "--log-level", "warning"]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(ENV, GATEWAY_TOKEN=bearer))


class HttpGateway:
    """``gateway serve --http`` in a subprocess on a free port."""

    def __init__(self, config: GatewayConfig) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "gateway", "--config", str(config.source), "serve"]
        cmd += ["--http", f"127.0.0.1:{self.port}", "--log-level", "warning"]
        log = config.state_dir / "bench-http.log"
        self.proc = start_server(cmd, f"{self.url}/healthz", "the HTTP gateway", log=log, env=ENV, timeout=60)

    def stop(self) -> None:
        stop_server(self.proc)


# --- the policy engine alone ------------------------------------------------------------------------


def typical_input(config: GatewayConfig) -> dict[str, Any]:
    """The input document of an fs_write of a new file by a developer, as the pipeline builds it."""
    from gateway.pipeline import policy_input
    from gateway.runtime import Gateway

    gateway = Gateway(config)
    bearer = gateway.tokens.issue(role="developer", agent="dev-1", ttl_s=3600)[0]
    call = Call(
        tool="fs_write",
        arguments={"path": "src/new_module.py", "content": "def f():\n    return 1\n"},
        origin=Origin(transport="inprocess", protocol_version="2026-07-28", token=bearer, session_id="bench"),
    )
    call.principal = gateway.tokens.verify(bearer)

    async def describe() -> None:
        for stage in gateway.describing:
            await stage(call)

    anyio.run(describe)
    return policy_input(call)


def policy_throughput(config: GatewayConfig, decisions: int, threads: int) -> tuple[float, float, str]:
    """decisions/s and the median µs per decision of the embedded engine over ``threads`` threads."""
    from gateway.policy.embedded import EmbeddedEngine
    from gateway.runtime import Gateway

    doc = typical_input(config)
    engine = EmbeddedEngine(config.policy.path, {"roles": Gateway(config).roles.as_data()})
    action = engine.decide_sync(doc).action
    per_thread = decisions // threads
    timings: list[float] = []
    barrier = threading.Barrier(threads + 1)

    def work() -> None:
        engine.decide_sync(doc)  # this thread's engine is built here, outside the timing
        barrier.wait()
        mine = []
        for _ in range(per_thread):
            began = time.perf_counter()
            engine.decide_sync(doc)
            mine.append(time.perf_counter() - began)
        timings.extend(mine)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - began
    return per_thread * threads / wall, statistics.median(timings) * 1e6, action


# --- the run ----------------------------------------------------------------------------------------


async def run_scenarios(args: argparse.Namespace, config: GatewayConfig, bearer: str) -> list[Result]:
    from gateway.runtime import Gateway

    echo = ("echo", {"text": "hello"})
    read = ("fs_read", {"path": "README.md"})
    n, calls, warmup = args.clients, args.calls, args.warmup
    results: list[Result] = []
    chosen = set(args.only.split(",")) if args.only else None

    def wanted(key: str) -> bool:
        return chosen is None or key in chosen

    def note(result: Result) -> None:
        results.append(result)
        print(f"  {result.name:<34} p50 {result.p50_ms:7.2f} ms  {result.throughput:8.1f} calls/s", file=sys.stderr)

    if wanted("direct"):
        server = StdioServerParameters(command=sys.executable, args=[str(ECHO)], env=ENV)
        sessions = [McpSession(lambda: Client(server), *echo) for _ in range(n)]
        note(await drive("echo: direct upstream, stdio", sessions, calls, warmup))
    if wanted("stdio"):
        sessions = [McpSession(lambda: Client(stdio_gateway(config, bearer)), "echo__echo", echo[1]) for _ in range(n)]
        note(await drive("echo: via gateway, stdio", sessions, calls, warmup))
    http = HttpGateway(config) if wanted("http") else None
    try:
        if http is not None:
            sessions = [McpSession(lambda: HttpClient(http.url, bearer), "echo__echo", echo[1]) for _ in range(n)]
            note(await drive("echo: via gateway, streamable HTTP", sessions, calls, warmup))
        if wanted("inproc"):
            gateway = Gateway(config)
            async with gateway.running():
                sessions = [InProcess(gateway, bearer, *read, session=f"s{i}") for i in range(n)]
                note(await drive("fs_read: gateway pipeline, in-process", sessions, calls, warmup))
        if wanted("stdio"):
            sessions = [McpSession(lambda: Client(stdio_gateway(config, bearer)), *read) for _ in range(n)]
            note(await drive("fs_read: via gateway, stdio", sessions, calls, warmup))
        if http is not None:
            sessions = [McpSession(lambda: HttpClient(http.url, bearer), *read) for _ in range(n)]
            note(await drive("fs_read: via gateway, streamable HTTP", sessions, calls, warmup))
    finally:
        if http is not None:
            http.stop()
    return results


def table(results: list[Result]) -> str:
    base = next((r for r in results if r.name.startswith("echo: direct")), None)
    header = f"{'scenario':<38} {'clients':>7} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'calls/s':>9}"
    header += f" {'p50 x':>7} {'p99 x':>7} {'tput x':>7}"
    lines = [header, "-" * len(header)]
    for r in results:
        line = (
            f"{r.name:<38} {r.clients:>7} {len(r.latencies):>6} {r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {r.throughput:>9.1f}"
        )
        if base is not None:
            line += (
                f" {r.p50_ms / base.p50_ms:>7.2f} {r.p99_ms / base.p99_ms:>7.2f} {r.throughput / base.throughput:>7.2f}"
            )
        if r.errors:
            line += f"  ({r.errors} errors)"
        lines.append(line)
    if base is not None:
        lines.append("x = gateway / direct (the echo upstream called over stdio without the gateway)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent MCP clients per scenario (8)")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per client (100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls per client first (10)")
    parser.add_argument("--decisions", type=int, default=4000, help="policy decisions per engine run (4000)")
    parser.add_argument("--only", help="comma-separated subset: direct,stdio,http,inproc,policy")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    args = parser.parse_args(argv)
    configure_logging("warning")

    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gateway-bench-") as scratch:
        config, bearer = workspace(Path(scratch))
        print(f"workspace {config.workspace}; {args.clients} clients x {args.calls} calls", file=sys.stderr)
        results = anyio.run(run_scenarios, args, config, bearer)
        policy: dict[str, Any] = {}
        if not args.only or "policy" in args.only.split(","):
            for threads in (1, 2):
                rate, median_us, action = policy_throughput(config, args.decisions, threads)
                policy[f"{threads}_thread"] = {"decisions_per_s": round(rate), "p50_us": round(median_us, 1)}
            policy["decision"] = action

    print(f"\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {sys.platform}")
    if results:
        print(table(results))
    if policy:
        one, two = policy["1_thread"], policy["2_thread"]
        print(
            f"\npolicy engine alone (embedded regorus, typical input, decision {policy['decision']!r}): "
            f"1 thread {one['decisions_per_s']:,} decisions/s (p50 {one['p50_us']} µs); "
            f"2 threads {two['decisions_per_s']:,} decisions/s (p50 {two['p50_us']} µs)"
        )
    print(f"\ntotal {time.perf_counter() - began:.1f} s")
    if args.json:
        print(json.dumps({"scenarios": [r.as_dict() for r in results], "policy": policy}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
