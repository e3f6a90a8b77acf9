"""What the gateway costs per call, beside the direct call and two bare proxies, in one interleaved run.

Run by hand (it is not a test, and nothing asserts on its numbers):

    .venv/bin/python bench/bench_gateway.py                      # the default run, a few minutes on 2 cores
    .venv/bin/python bench/bench_gateway.py --calls 300 --json   # longer, and the figures as JSON too

It sets up a scratch git repository and workspace (``gateway init``), a role allowed to call the test echo
upstream (tests/servers/echo_server.py, declared read-only so the policy decides tier 1) and ``fs_read``,
starts the echo server once over streamable HTTP and declares it (``echoh``) next to a stdio copy
(``echo``), opens ``--clients`` MCP sessions to every target below, and then times them in interleaved
rounds: each round gives every target, in a rotating order, a burst of calls from all its clients at
once, so whatever else the machine does hits every target alike.

    direct stdio       SDK client -> echo_server.py over stdio (one server process per client)      baseline
    sdk proxy stdio    SDK client -> bench/sdk_proxy.py --stdio (one per client) -> echo over stdio  / direct stdio
    mcp-proxy stdio    SDK client -> mcp-proxy (one per client) -> the HTTP echo server            / direct stdio
    gateway stdio      SDK client -> `gateway serve --stdio` (one per client) -> echo over stdio    / direct stdio
    direct http        SDK clients -> echo_server.py over streamable HTTP (one server)               baseline
    sdk proxy http     SDK clients -> one sdk_proxy.py --http -> that same HTTP echo server          / direct http
    mcp-proxy http     SDK clients -> one mcp-proxy --port -> echo over stdio (its only server mode)  / direct http
    gateway http       SDK clients -> one `gateway serve --http` -> that same HTTP echo server       / direct http
    gateway http w2    the same with `--workers 2` (skipped when `gateway serve --help` lacks it)    / direct http
    gateway http pg r2 two replicas (two `gateway serve --http`) on one PostgreSQL store (a throwaway
                       server, tests/pg.py, fsync on), the clients alternating between them           / direct http
    fs_read stdio, http  the built-in tool through the gateway (no upstream hop)              / direct, same transport
    in-process         the gateway's pipeline called directly, no MCP transport (fs_read, echo)

mcp-proxy (PyPI ``mcp-proxy``) needs mcp<2: it runs from bench/.venv-mcp-proxy, made on first use; its rows
are skipped, with the reason, when that cannot be installed. Each row is divided by the direct row of the
same transport. CPU ms per call is read from /proc (bench/proc_cpu.py): user + system time of the proxy's
processes (one per client over stdio; the server and its workers over HTTP; the gateway's decision workers
too) over the timed calls, not counting the upstream echo servers; on a direct row it is the echo server's own.
Last, in-process and one at a time: the per-decision cost (shell classification plus policy) for typical shell
commands, and what the whole pipeline adds to a tier-1 fs_read over calling the tool's handler alone.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from peer_venv import PeerVenv, Skip  # noqa: E402
from proc_cpu import ProcCpu, marked_env  # noqa: E402
from profile_summary import Sampling, summarise, summary_text  # noqa: E402

from gateway.bootstrap import init_workspace  # noqa: E402
from gateway.config import GatewayConfig  # noqa: E402
from gateway.judge.call import Call  # noqa: E402
from gateway.origin import Origin  # noqa: E402
from gateway.process import free_port, start_server, stop_server  # noqa: E402
from gateway.repo import Repo  # noqa: E402
from gateway.telemetry import configure_logging  # noqa: E402

ECHO = ROOT / "tests" / "servers" / "echo_server.py"
SDK_PROXY = ROOT / "bench" / "sdk_proxy.py"
MCP_PROXY = PeerVenv(ROOT / "bench" / ".venv-mcp-proxy", "mcp-proxy")
BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
for _name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "GATEWAY_TOKEN"):
    ENV.pop(_name, None)


# --- measuring --------------------------------------------------------------------------------------


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Result:
    name: str
    clients: int
    latencies: list[float]  # seconds, every timed call of every client
    wall: float  # seconds: the sum over the target's bursts, each from its start to its last answer
    errors: int = 0
    cpu: float | None = None  # CPU seconds of the metered processes over the timed calls (None: not metered)

    def quantile(self, q: float) -> float:
        return quantile(self.latencies, q)

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies) * 1000

    @property
    def p95_ms(self) -> float:
        return self.quantile(0.95) * 1000

    @property
    def p99_ms(self) -> float:
        return self.quantile(0.99) * 1000

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.wall

    @property
    def cpu_ms_per_call(self) -> float | None:
        return None if self.cpu is None else self.cpu * 1000 / len(self.latencies)

    def as_dict(self) -> dict[str, Any]:
        cpu = self.cpu_ms_per_call
        return {
            "scenario": self.name,
            "clients": self.clients,
            "calls": len(self.latencies),
            "errors": self.errors,
            "p50_ms": round(self.p50_ms, 3),
            "p95_ms": round(self.p95_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "calls_per_s": round(self.throughput, 1),
            "cpu_ms_per_call": None if cpu is None else round(cpu, 3),
        }


CallFn = Callable[[], Awaitable[bool]]  # one call; True when the answer is not an error


@dataclass
class Target:
    """One thing to time: its sessions (one per client), opened once and kept open for the whole run."""

    key: str
    name: str
    sessions: list[AbstractAsyncContextManager[CallFn]]
    baseline: str | None = None  # the key of the direct target over the same transport
    meter: ProcCpu | None = None  # the processes whose CPU the target's calls cost
    calls: list[CallFn] = field(default_factory=list)
    result: Result | None = None


async def burst(target: Target, calls: int) -> None:
    """All of the target's clients at once, ``calls`` each; adds the latencies, the burst's wall time and
    the CPU its processes used (sampled from /proc just before and just after)."""
    assert target.result is not None
    latencies = target.result.latencies
    errors = 0

    async def client(call: CallFn) -> None:
        nonlocal errors
        for _ in range(calls):
            began = time.perf_counter()
            ok = await call()
            latencies.append(time.perf_counter() - began)
            errors += not ok

    cpu = target.meter.seconds() if target.meter is not None else 0.0
    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for call in target.calls:
            tg.start_soon(client, call)
    target.result.wall += time.perf_counter() - began
    if target.meter is not None:
        target.result.cpu = (target.result.cpu or 0.0) + target.meter.seconds() - cpu
    target.result.errors += errors


async def run_interleaved(targets: list[Target], calls: int, warmup: int, rounds: int) -> None:
    """Open every target's sessions, warm each up, then ``rounds`` rounds of one burst per target.

    The order rotates each round, so no target always runs right after the same neighbour."""
    async with AsyncExitStack() as stack:
        for target in targets:
            for session in target.sessions:
                target.calls.append(await stack.enter_async_context(session))
            for call in target.calls:
                for _ in range(warmup):
                    if not await call():
                        raise RuntimeError(f"{target.name}: a warm-up call failed")
            target.result = Result(target.name, len(target.calls), [], 0.0)
            metered = f", metering pids {target.meter.pids()}" if target.meter is not None else ""
            print(f"  opened {target.name} ({len(target.calls)} clients{metered})", file=sys.stderr)
        per_round = [calls // rounds + (1 if i < calls % rounds else 0) for i in range(rounds)]
        for number, n in enumerate(per_round):
            shift = number % len(targets)
            for target in targets[shift:] + targets[:shift]:
                await burst(target, n)
            print(f"  round {number + 1}/{rounds} done", file=sys.stderr)


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
            result = await self.gateway.stacks.call(
                Call(tool=self.tool, arguments=dict(self.arguments), origin=self.origin)
            )
            return not getattr(result, "is_error", False)

        return call

    async def __aexit__(self, *exc: Any) -> None:
        return None


# --- the workspace ----------------------------------------------------------------------------------


def workspace(base: Path, echo_url: str, store: str | None = None) -> tuple[GatewayConfig, str]:
    repo = base / "repo"
    repo.mkdir(parents=True)
    git = Repo(repo)
    git.run("init", "-q", "-b", "main")
    (repo / "README.md").write_text("# bench repo\n" + "a line of text\n" * 50)
    git.run("add", "-A")
    git.run("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "initial")
    config = init_workspace(repo)
    assert config.source is not None
    tools = ["echo__echo", "echoh__echo", "fs_read"]
    role = {"name": "bench", "description": "benchmark role", "tools": tools, "max_tier": 1}
    (config.roles / "bench.yaml").write_text(yaml.safe_dump(role))
    raw = yaml.safe_load(config.source.read_text())
    raw["upstreams"] = {
        "echo": {"command": sys.executable, "args": [str(ECHO)], "env": {}, "read_only": ["echo"]},
        "echoh": {"url": echo_url, "read_only": ["echo"]},  # the very server the direct HTTP row calls
    }
    if store is not None:
        raw["store"] = store
    config.source.write_text(yaml.safe_dump(raw))
    config = GatewayConfig.load(config.source)
    from gateway.runtime import Gateway

    bearer = Gateway(config).tokens.issue(role="bench", agent="bench", ttl_s=3600)[0]
    return config, bearer


def gateway_command(config: GatewayConfig, *serve: str) -> list[str]:
    return [sys.executable, "-m", "gateway", "--config", str(config.source), "serve", *serve, "--log-level", "warning"]


def stdio_gateway(config: GatewayConfig, bearer: str, group: str) -> StdioServerParameters:
    argv = gateway_command(config, "--stdio")
    env = marked_env(dict(ENV, GATEWAY_TOKEN=bearer), group)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env)


def workers_flag() -> Skip | None:
    """None when ``gateway serve`` takes ``--workers``; otherwise why the row is skipped."""
    argv = [sys.executable, "-m", "gateway", "serve", "--help"]
    shown = subprocess.run(argv, capture_output=True, text=True, env=ENV)
    return None if "--workers" in shown.stdout else Skip("`gateway serve --help` has no --workers in this tree")


class HttpServer:
    """A server on a free port of 127.0.0.1 for the whole run, in CPU group ``group`` (proc_cpu.py).

    Ready when ``health`` (a path) answers 200, or, for a server without one, once it accepts connections."""

    def __init__(
        self,
        what: str,
        argv: Callable[[int], list[str]],  # the command, given its port
        group: str,
        health: str | None = None,
        log: Path | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.meter = ProcCpu(group)
        env = marked_env(ENV, group)
        if health is not None:
            self.proc = start_server(argv(self.port), self.url + health, what, log=log, env=env, timeout=60)
            return
        self.proc = subprocess.Popen(argv(self.port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{what} did not start listening on port {self.port}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        stop_server(self.proc)


def http_echo() -> HttpServer:
    """tests/servers/echo_server.py over streamable HTTP (at /mcp): the direct HTTP row and every HTTP upstream."""
    argv = lambda port: [sys.executable, str(ECHO), "--http", str(port)]  # noqa: E731
    return HttpServer("the HTTP echo server", argv, "echo-http")


# --- per decision, in-process -----------------------------------------------------------------------

SHELL_COMMANDS = ["pytest -q tests/test_x.py", "git diff --stat", "ls -la src && grep -rn TODO src | head -20"]


async def per_decision(config: GatewayConfig, n: int) -> dict[str, Any]:
    """Shell classification (resolve, validate, describe: the tree-sitter analysis) and the policy decision for
    typical commands, one at a time; and the whole pipeline on a tier-1 fs_read against its handler alone."""
    from gateway.judge.decide import policy_input
    from gateway.runtime import Gateway
    from gateway.tools.spec import ToolInvocation

    gateway = Gateway(config, isolated=False)  # the decision itself, in this process (a server uses workers)
    developer = gateway.tokens.issue(role="developer", agent="dev-1", ttl_s=3600)[0]
    origin = Origin(transport="inprocess", protocol_version="2026-07-28", token=developer, session_id="bench")
    principal = gateway.tokens.verify(developer)
    out: dict[str, Any] = {"shell": []}
    for command in SHELL_COMMANDS:
        describe_s, decide_s, total_s = [], [], []
        decision = None
        for i in range(n + n // 10):  # the first tenth is a warm-up
            call = Call(tool="shell_run", arguments={"command": command}, origin=origin)
            call.principal = principal
            began = time.perf_counter()
            for stage in gateway.stacks.describing:
                await stage(call)
            described = time.perf_counter()
            decision = gateway.engine.decide_sync(policy_input(call))
            done = time.perf_counter()
            if i >= n // 10:
                describe_s.append(described - began)
                decide_s.append(done - described)
                total_s.append(done - began)
        assert decision is not None
        out["shell"].append(
            {
                "command": command,
                "decision": f"{decision.action} tier {decision.tier}",
                "classify_p50_ms": statistics.median(describe_s) * 1000,
                "policy_p50_ms": statistics.median(decide_s) * 1000,
                "p50_ms": statistics.median(total_s) * 1000,
                "p99_ms": quantile(total_s, 0.99) * 1000,
                "decisions_per_s": len(total_s) / sum(total_s),
            }
        )
    # the whole pipeline on a tier-1 fs_read (the bench role), against the same tool's handler alone
    bench = gateway.tokens.issue(role="bench", agent="bench", ttl_s=3600)[0]
    origin = Origin(transport="inprocess", protocol_version="2026-07-28", token=bench, session_id="bench")
    spec = gateway.catalog.get("fs_read")
    assert spec is not None
    invocation = ToolInvocation(
        arguments={"path": "README.md"},
        workspace=gateway.workspace,
        progress=_no_progress,
        principal=gateway.tokens.verify(bench),
        trace_id="0" * 32,
    )
    pipeline_s, handler_s = [], []
    gateway = Gateway(config)  # as `gateway serve` decides: in worker processes, under the deadline
    async with gateway.running():
        for i in range(n + n // 10):
            began = time.perf_counter()
            result = await gateway.stacks.call(Call(tool="fs_read", arguments={"path": "README.md"}, origin=origin))
            middle = time.perf_counter()
            await spec.handler(invocation)
            done = time.perf_counter()
            assert not getattr(result, "is_error", False), result
            if i >= n // 10:
                pipeline_s.append(middle - began)
                handler_s.append(done - middle)
    out["fs_read"] = {
        "pipeline_p50_ms": statistics.median(pipeline_s) * 1000,
        "pipeline_p99_ms": quantile(pipeline_s, 0.99) * 1000,
        "handler_p50_ms": statistics.median(handler_s) * 1000,
        "adds_p50_ms": (statistics.median(pipeline_s) - statistics.median(handler_s)) * 1000,
    }
    return out


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


# --- the run ----------------------------------------------------------------------------------------


# what --only can pick: the interleaved targets (keys as in targets_for, in table order), then the in-process ones
PARTS = (
    "direct-stdio",
    "sdk-stdio",
    "mcpp-stdio",
    "gw-stdio",
    "fs-stdio",
    "direct-http",
    "sdk-http",
    "mcpp-http",
    "gw-http",
    "gw-http-w2",
    "gw-http-pg-r2",
    "fs-http",
    "inproc",
    "decisions",
)
# the bare SDK proxy over the same transport: the CPU per call the issue asks the gateway to match
SDK_ROW = {"direct-stdio": "sdk-stdio", "direct-http": "sdk-http"}  # by the row's baseline


def targets_for(
    args: argparse.Namespace,
    chosen: set[str] | None,
    config: GatewayConfig,
    bearer: str,
    echo: HttpServer,
    stack: ExitStack,
) -> tuple[list[Target], list[tuple[str, Skip]]]:
    """The chosen targets, with the servers they need started (``stack`` stops them); and the rows skipped."""
    n = args.clients
    text = {"text": "hello"}
    read = {"path": "README.md"}
    targets: list[Target] = []
    skipped: list[tuple[str, Skip]] = []

    def want(key: str) -> bool:
        return chosen is None or key in chosen

    def stdio(group: str, argv: list[str], tool: str, arguments: dict[str, Any], **env: str) -> list[Any]:
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=marked_env(dict(ENV, **env), group))
        return [McpSession(lambda: Client(params), tool, arguments) for _ in range(n)]

    def over_http(server: HttpServer, tool: str, arguments: dict[str, Any]) -> list[Any]:
        return [McpSession(lambda: HttpClient(server.url, bearer), tool, arguments) for _ in range(n)]

    def started(server: HttpServer) -> HttpServer:
        stack.callback(server.stop)
        return server

    def add(key: str, name: str, sessions: list[Any], baseline: str | None = None, group: str | None = None) -> None:
        targets.append(Target(key, name, sessions, baseline, ProcCpu(group or key)))  # group: whose CPU it costs

    mcp_proxy = MCP_PROXY.executable() if want("mcpp-stdio") or want("mcpp-http") else None
    gateway_stdio = gateway_command(config, "--stdio")
    if want("direct-stdio"):
        add("direct-stdio", "echo: direct, stdio", stdio("direct-stdio", [sys.executable, str(ECHO)], "echo", text))
    if want("sdk-stdio"):
        argv = [sys.executable, str(SDK_PROXY), "--stdio", "--", sys.executable, str(ECHO)]
        add("sdk-stdio", "echo: SDK proxy, stdio", stdio("sdk-stdio", argv, "echo", text), "direct-stdio")
    if want("mcpp-stdio"):
        if isinstance(mcp_proxy, Skip):
            skipped.append(("echo: mcp-proxy, stdio", mcp_proxy))
        else:
            argv = [str(mcp_proxy), "--log-level", "WARNING", "--transport", "streamablehttp", f"{echo.url}/mcp"]
            sessions = stdio("mcpp-stdio", argv, "echo", text)
            add("mcpp-stdio", "echo: mcp-proxy, stdio (-> HTTP)", sessions, "direct-stdio")
    if want("gw-stdio"):
        sessions = stdio("gw-stdio", gateway_stdio, "echo__echo", text, GATEWAY_TOKEN=bearer)
        add("gw-stdio", "echo: gateway, stdio", sessions, "direct-stdio")
    if want("fs-stdio"):
        sessions = stdio("fs-stdio", gateway_stdio, "fs_read", read, GATEWAY_TOKEN=bearer)
        add("fs-stdio", "fs_read: gateway, stdio", sessions, "direct-stdio")
    if want("direct-http"):
        add("direct-http", "echo: direct, HTTP", over_http(echo, "echo", text), group=echo.meter.name)
    if want("sdk-http"):
        argv = lambda port: [  # noqa: E731
            *(sys.executable, str(SDK_PROXY), "--http", f"127.0.0.1:{port}", "--upstream", f"{echo.url}/mcp")
        ]
        proxy = started(HttpServer("the SDK proxy", argv, "sdk-http"))
        add("sdk-http", "echo: SDK proxy, HTTP", over_http(proxy, "echo", text), "direct-http")
    if want("mcpp-http"):
        if isinstance(mcp_proxy, Skip):
            skipped.append(("echo: mcp-proxy, HTTP", mcp_proxy))
        else:
            argv = lambda port: [  # noqa: E731
                *(str(mcp_proxy), "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING"),
                *("--", sys.executable, str(ECHO)),
            ]
            proxy = started(HttpServer("mcp-proxy", argv, "mcpp-http", health="/status"))
            add("mcpp-http", "echo: mcp-proxy, HTTP (-> stdio)", over_http(proxy, "echo", text), "direct-http")
    if want("gw-http") or want("fs-http"):
        serve = lambda port: gateway_command(config, "--http", f"127.0.0.1:{port}")  # noqa: E731
        log = config.state / "bench-http.log"
        gateway = started(HttpServer("the HTTP gateway", serve, "gw-http", health="/healthz", log=log))
        if want("gw-http"):
            add("gw-http", "echo: gateway, HTTP", over_http(gateway, "echoh__echo", text), "direct-http")
    if want("gw-http-w2"):
        missing = workers_flag()
        if missing is not None:
            skipped.append(("echo: gateway, HTTP, --workers 2", missing))
        else:
            serve = lambda port: gateway_command(config, "--http", f"127.0.0.1:{port}", "--workers", "2")  # noqa: E731
            log = config.state / "bench-http-w2.log"
            workers = started(HttpServer("the HTTP gateway, 2 workers", serve, "gw-http-w2", "/healthz", log))
            sessions = over_http(workers, "echoh__echo", text)
            add("gw-http-w2", "echo: gateway, HTTP, --workers 2", sessions, "direct-http")
    if want("gw-http-pg-r2"):
        replicas = postgres_replicas(echo, stack)
        if isinstance(replicas, Skip):
            skipped.append(("echo: gateway, HTTP, 2 replicas on PostgreSQL", replicas))
        else:
            urls, pg_bearer = replicas
            sessions = [
                McpSession(lambda url=urls[i % 2]: HttpClient(url, pg_bearer), "echoh__echo", text) for i in range(n)
            ]
            add("gw-http-pg-r2", "echo: gateway, HTTP, 2 replicas on PostgreSQL", sessions, "direct-http")
    if want("fs-http"):
        # the same server as gw-http: bursts never overlap, so each one's CPU is its own target's
        add("fs-http", "fs_read: gateway, HTTP", over_http(gateway, "fs_read", read), "direct-http", gateway.meter.name)
    return targets, skipped


PG_PASSWORD_VAR = "GATEWAY_BENCH_PGPASSWORD"  # gateway.yaml names it; the replicas get it from the environment


def postgres_replicas(echo: HttpServer, stack: ExitStack) -> tuple[list[str], str] | Skip:
    """A throwaway PostgreSQL (durable, as a real one runs), a workspace whose store it is, and two
    ``gateway serve --http`` replicas of it in one CPU group; answers their URLs and a token, or why not."""
    sys.path.insert(0, str(ROOT / "tests"))
    from pg import PostgresServer, server_binaries

    binaries = server_binaries()
    if binaries is None:
        return Skip("no PostgreSQL server binaries (Debian: apt-get install postgresql)")
    server = PostgresServer.start(binaries, durable=True)
    stack.callback(server.close)
    os.environ[PG_PASSWORD_VAR] = ENV[PG_PASSWORD_VAR] = server.password
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gateway-bench-pg-")))
    store = server.url(server.fresh_database(), password="${" + PG_PASSWORD_VAR + "}")
    config, bearer = workspace(scratch, f"{echo.url}/mcp", store=store)
    serve = lambda port: gateway_command(config, "--http", f"127.0.0.1:{port}")  # noqa: E731
    urls = []
    for n in (1, 2):
        log = config.state / f"bench-replica-{n}.log"
        replica = HttpServer(f"gateway replica {n}", serve, "gw-http-pg-r2", "/healthz", log)
        stack.callback(replica.stop)
        urls.append(replica.url)
    return urls, bearer


async def run_inprocess(args: argparse.Namespace, config: GatewayConfig, bearer: str) -> list[Result]:
    """The pipeline with no transport, after the interleaved rounds (its own gateway and echo upstream)."""
    from gateway.runtime import Gateway

    gateway = Gateway(config)
    async with gateway.running():
        targets = [
            Target(
                "inproc-fs",
                "fs_read: gateway pipeline, in-process",
                [
                    InProcess(gateway, bearer, "fs_read", {"path": "README.md"}, session=f"s{i}")
                    for i in range(args.clients)
                ],
            ),
            Target(
                "inproc-echo",
                "echo: gateway pipeline, in-process",
                [
                    InProcess(gateway, bearer, "echo__echo", {"text": "hello"}, session=f"e{i}")
                    for i in range(args.clients)
                ],
            ),
        ]
        await run_interleaved(targets, args.calls, args.warmup, args.rounds)
    return [t.result for t in targets if t.result is not None]


def table(targets: list[Target], extra: list[Result], skipped: list[tuple[str, Skip]]) -> str:
    by_key = {t.key: t for t in targets}
    header = f"{'scenario':<36} {'clients':>7} {'calls':>6} {'p50 ms':>8} {'p95 ms':>8} {'calls/s':>8}"
    header += f" {'p50 x':>6} {'p95 x':>6} {'tput x':>6} {'cpu ms':>7} {'cpu/sdk':>7}"
    lines = [header, "-" * len(header)]
    rows = [(t.result, t.baseline) for t in targets] + [(r, None) for r in extra]
    for r, baseline in rows:
        assert r is not None
        line = f"{r.name:<36} {r.clients:>7} {len(r.latencies):>6} {r.p50_ms:>8.2f} {r.p95_ms:>8.2f}"
        line += f" {r.throughput:>8.1f}"
        base_target = by_key.get(baseline or "")
        base = base_target.result if base_target is not None else None
        if base is not None:
            ratios = (r.p50_ms / base.p50_ms, r.p95_ms / base.p95_ms, r.throughput / base.throughput)
            line += "".join(f" {ratio:>6.2f}" for ratio in ratios)
        else:
            line += " " * 21
        cpu = r.cpu_ms_per_call
        line += f" {cpu:>7.2f}" if cpu is not None else " " * 8
        sdk = by_key.get(SDK_ROW.get(baseline or "", ""))
        sdk_cpu = sdk.result.cpu_ms_per_call if sdk is not None and sdk.result is not None else None
        if cpu is not None and sdk_cpu and sdk is not None and sdk.result is not r:
            line += f" {cpu / sdk_cpu:>7.2f}"
        if r.errors:
            line += f"  ({r.errors} errors)"
        lines.append(line)
    lines += [
        "x = the row / the direct row over the same transport; latency x: higher is slower, throughput x: lower is",
        "    slower. cpu ms = user + system CPU of the proxy's processes per timed call, from /proc (the direct",
        "    rows: the echo server's own); cpu/sdk = that / the bare SDK proxy's over the same transport.",
    ]
    lines += [f"skipped: {name}: {skip.reason}" for name, skip in skipped]
    return "\n".join(lines)


def decisions_text(figures: dict[str, Any]) -> str:
    lines = [
        "per decision, in-process, one at a time (classify = resolve + validate + describe, the shell analysis):",
        f"  {'command':<44} {'decision':<14} {'classify':>9} {'policy':>8} {'p50 ms':>7} {'p99 ms':>7} {'dec/s':>7}",
    ]
    for row in figures["shell"]:
        lines.append(
            f"  {row['command']:<44} {row['decision']:<14} {row['classify_p50_ms']:>9.3f} {row['policy_p50_ms']:>8.3f}"
            f" {row['p50_ms']:>7.3f} {row['p99_ms']:>7.3f} {row['decisions_per_s']:>7.0f}"
        )
    fs = figures["fs_read"]
    lines.append(
        f"tier-1 fs_read: whole pipeline p50 {fs['pipeline_p50_ms']:.3f} ms (p99 {fs['pipeline_p99_ms']:.3f}), "
        f"the handler alone {fs['handler_p50_ms']:.3f} ms: the pipeline adds {fs['adds_p50_ms']:.3f} ms p50"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent MCP clients per target (8)")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per client and target (100)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds the calls are split into (10)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls per client first (10)")
    parser.add_argument("--decisions", type=int, default=2000, help="timed decisions per shell command (2000)")
    parser.add_argument(
        "--only",
        help=f"comma-separated subset: {','.join(PARTS)}",
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="sample the processes of --profile-targets with py-spy for the whole run (DIR/<target>.txt, folded"
        " stacks) and print where their time goes (bench/profile_summary.py)",
    )
    parser.add_argument(
        "--profile-targets",
        default="gw-http",
        type=lambda text: set(text.split(",")),
        help="the targets --profile samples (gw-http)",
    )
    args = parser.parse_args(argv)
    configure_logging("warning")
    chosen = set(args.only.split(",")) if args.only else None
    if chosen is not None and chosen - set(PARTS):
        # an unknown name would silently drop its rows (and the ratios that need them)
        parser.error(f"--only: unknown {', '.join(sorted(chosen - set(PARTS)))}; choose from {','.join(PARTS)}")

    began = time.perf_counter()
    targets: list[Target] = []
    extra: list[Result] = []
    decisions: dict[str, Any] = {}
    skipped: list[tuple[str, Skip]] = []
    with ExitStack() as stack:
        echo = http_echo()
        stack.callback(echo.stop)
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="gateway-bench-"))
        config, bearer = workspace(Path(scratch), f"{echo.url}/mcp")
        print(f"workspace {config.workspace}; {args.clients} clients x {args.calls} calls", file=sys.stderr)
        with ExitStack() as servers:  # the proxies and gateways, stopped before the in-process parts
            targets, skipped = targets_for(args, chosen, config, bearer, echo, servers)
            for target in targets if args.profile else []:
                if target.meter is not None and target.key in args.profile_targets:
                    servers.enter_context(Sampling(target.meter, args.profile / f"{target.key}.txt"))
            if targets:
                anyio.run(run_interleaved, targets, args.calls, args.warmup, args.rounds)
        if chosen is None or "inproc" in chosen:
            extra = anyio.run(run_inprocess, args, config, bearer)
        if chosen is None or "decisions" in chosen:
            decisions = anyio.run(per_decision, config, args.decisions)

    print(f"\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {sys.platform}")
    if targets or extra or skipped:
        print(table(targets, extra, skipped))
    if decisions:
        print()
        print(decisions_text(decisions))
    for name in sorted(args.profile_targets) if args.profile else []:
        if (args.profile / f"{name}.txt").exists():
            print(f"\nwhere {name}'s processes spend their time (py-spy, {args.profile / name}.txt):")
            print(summary_text(summarise(args.profile / f"{name}.txt")))
    print(f"\ntotal {time.perf_counter() - began:.1f} s")
    if args.json:
        scenarios = [t.result.as_dict() for t in targets if t.result is not None] + [r.as_dict() for r in extra]
        skips = {name: skip.reason for name, skip in skipped}
        print(json.dumps({"scenarios": scenarios, "skipped": skips, "decisions": decisions}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
