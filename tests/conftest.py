"""Shared fixtures: real git repositories, real gateway processes, real MCP clients, a real PostgreSQL.

def test_x(gateway, token): ...                        # in-process Gateway on a fresh repo
pytestmark = pytest.mark.both_stores                   # a module's tests run on SQLite and on PostgreSQL
GATEWAY_TEST_STORE=postgresql pytest                   # every test's gateway on PostgreSQL
with http_gateway(config.source) as url: ...           # `gateway serve --http` as a subprocess
async with http_client(url, token(config, "worker")) as client: ...
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pg import PASSWORD_VAR, PostgresServer, server_binaries

from gateway.bootstrap import init_workspace
from gateway.config import GatewayConfig
from gateway.identity.keys import KeyRing
from gateway.identity.revocations import Revocations
from gateway.identity.roles import LiveRoles
from gateway.identity.tokens import Tokens
from gateway.process import free_port, server_process, start_server
from gateway.repo import Repo

ROOT = Path(__file__).resolve().parent.parent
NPM_MODULES = Path(os.environ.get("GATEWAY_TEST_NPM", ROOT / ".venv" / "npm" / "node_modules")).resolve()
BIN = Path(sys.executable).parent

# Compile each module once. With PYTHONDONTWRITEBYTECODE set (as in some shells and CI images), every gateway
# process the suite starts (hundreds) compiled the gateway package afresh (0.47 s of CPU for all of it), and every
# xdist worker rewrote every test module's asserts again; the processes the tests start inherit this.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# The real OPA loaded into this process (tests/real_opa.py) is Go: its collector, at the default GOGC, took a third
# of each evaluation's CPU; Go reads GOGC once, when the library starts, so it is set before any test loads it.
os.environ.setdefault("GOGC", "1000")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def session_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Gateway state dirs (default: under $XDG_STATE_HOME) made by module-scoped fixtures stay out of $HOME."""
    home = tmp_path_factory.mktemp("xdg-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(home))
        yield home


@pytest.fixture(autouse=True)
def private_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's gateway state dirs go to its own temporary directory, for the test process and the
    gateway processes it starts."""
    home = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def state_of(workspace: Path) -> Path:
    """The state dir of the workspace whose gateway.yaml is in ``workspace``."""
    return GatewayConfig.load(workspace / "gateway.yaml").state


def make_repo(path: Path) -> Path:
    """A git repository with a README, a src/ file and one commit on main."""
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path)
    repo.run("init", "-q", "-b", "main")
    (path / "README.md").write_text("# demo repo\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("def answer():\n    return 41\n")
    repo.run("add", "-A")
    repo.run("commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def workspace_for_tests(repo: Path) -> GatewayConfig:
    """``gateway init`` on ``repo``, with a decision deadline a loaded two-core CI machine always meets (the
    production 0.5 s is not; the deadline's own tests set theirs): no test fails on wall-clock luck. One decision
    worker, not the production two: every running gateway starts its pool, a worker costs ~0.1 s of CPU to start
    and the suite starts over a thousand; the deadline's tests (tests/test_decision_deadline.py) replace these
    settings and run the production pool."""
    return reconfigure(init_workspace(repo), policy={"engine": "embedded", "deadline_s": 10.0, "workers": 1})


STORES = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_stores: run the test on SQLite and on PostgreSQL (the store fixture)")
    config.addinivalue_line("markers", "one_store: in a both_stores module, a test whose subject is not the store")
    config.addinivalue_line("markers", "slow: a test of many seconds; -m 'not slow' runs the fast subset")
    if hasattr(config.option, "loadscopereorder"):
        # xdist's default sorts files by their number of tests, which put the few-but-long ones last (a tail of
        # minutes on one worker); pytest_collection_modifyitems's order is the one to keep
        config.option.loadscopereorder = False


# The suite's files by cost, heaviest first (tests/suite_costs.py writes it from a measured run). xdist's loadfile
# hands a worker the next file as it runs out of work: the heaviest first, the light ones fill the gaps at the end
# (longest-processing-time-first), so the two workers finish together. A file not listed yet counts as average.
COSTS = Path(__file__).with_name("suite_costs.json")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    costs: dict[str, float] = json.loads(COSTS.read_text()) if COSTS.exists() else {}
    average = sum(costs.values()) / len(costs) if costs else 0.0
    # a stable sort: within a file the order (and so its module fixtures' lifetimes) is pytest's own
    items.sort(key=lambda item: -costs.get(item.nodeid.split("::")[0], average))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With GATEWAY_TEST_COSTS=file, each test's wall and CPU (this process and the processes it started and
    reaped: gateways, git, bubblewrap) as a JSON line, for tests/suite_costs.py."""
    out = os.environ.get("GATEWAY_TEST_COSTS")
    if not out:
        yield
        return
    started, cpu = time.monotonic(), _cpu_seconds()
    yield
    row = {"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "-"), "start": started}
    row |= {"wall": time.monotonic() - started, "cpu": _cpu_seconds() - cpu}
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")


def _cpu_seconds() -> float:
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marked = metafunc.definition.get_closest_marker
    if "store" in metafunc.fixturenames and marked("both_stores") and not marked("one_store"):
        metafunc.parametrize("store", STORES, indirect=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """Debian's PostgreSQL, started once for the session as the postgres user (see tests/pg.py)."""
    binaries = server_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL's server binaries are not installed (Debian: apt-get install postgresql)")
    server = PostgresServer.start(binaries)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PASSWORD_VAR, server.password)  # gateway.yaml names the variable, gateway processes inherit it
        yield server
    server.close()


@pytest.fixture
def store(request: pytest.FixtureRequest) -> str | None:
    """The test's store as gateway.yaml's ``store:`` says it: None for SQLite, else a fresh PostgreSQL
    database's URL with ``${GATEWAY_TEST_PGPASSWORD}`` for its password. SQLite unless the test is marked
    both_stores (then both) or GATEWAY_TEST_STORE=postgresql."""
    kind = getattr(request, "param", os.environ.get("GATEWAY_TEST_STORE", "sqlite"))
    if kind == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.url(server.fresh_database(), password="${" + PASSWORD_VAR + "}")


@pytest.fixture
def config(repo: Path, store: str | None) -> GatewayConfig:
    config = workspace_for_tests(repo)
    return config if store is None else reconfigure(config, store=store)


@pytest.fixture
def gateway(config: GatewayConfig) -> Any:
    from gateway.runtime import Gateway

    return Gateway(config)


def reconfigure(config: GatewayConfig, **changes: Any) -> GatewayConfig:
    """Rewrite gateway.yaml with top-level keys changed, and load it again."""
    assert config.source is not None
    raw = yaml.safe_load(config.source.read_text())
    raw.update(changes)
    config.source.write_text(yaml.safe_dump(raw))
    return GatewayConfig.load(config.source)


def token(config: GatewayConfig, role: str, agent: str = "agent-1", task: str | None = None, ttl: int = 3600) -> str:
    """The token ``Gateway(config).tokens.issue`` gives: the same Tokens on the state dir's key ring and roles,
    without building a whole Gateway (store, policy, toolsets) per token. Issuing never reads revocations."""
    tokens = Tokens(
        KeyRing(config.keys_dir),
        LiveRoles(config.roles_dir),
        cast(Revocations, None),
        config.identity.issuer,
        config.identity.audience,
    )
    return tokens.issue(role=role, agent=agent, task=task, ttl_s=ttl)[0]


@contextmanager
def http_gateway(config_path: Path, timeout: float = 30.0, workers: int = 1) -> Iterator[str]:
    """``gateway serve --http [--workers N]`` in a subprocess on a free port; yields the base URL."""
    port = free_port()
    log = GatewayConfig.load(config_path).state / f"gateway-{port}.log"
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "gateway", "--config", str(config_path), "serve", "--http", f"127.0.0.1:{port}"]
    argv += ["--workers", str(workers)] if workers > 1 else []
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    with server_process(argv, f"{url}/healthz", "the gateway", log=log, env=env, timeout=timeout):
        yield url


@contextmanager
def killable_gateway(config_path: Path, alone: bool = False) -> Iterator[tuple[str, Callable[[], None]]]:
    """``gateway serve --http`` in its own process group; yields its URL and ``kill()``: SIGKILL to the gateway
    and every git or sandboxed command it is running, as a power loss would; with ``alone``, to the gateway
    process only (the OOM killer's way: a git it started runs on, orphaned)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = GatewayConfig.load(config_path).state / f"gateway-{port}.log"
    argv = [sys.executable, "-m", "gateway", "--config", str(config_path), "serve", "--http", f"127.0.0.1:{port}"]
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    proc = start_server(argv, f"{url}/healthz", "the gateway", log=log, env=env, new_session=True)

    def kill() -> None:
        if proc.poll() is None:
            if alone:
                os.kill(proc.pid, signal.SIGKILL)
            else:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    try:
        yield url, kill
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


async def kill_when(
    kill: Callable[[], None], condition: Callable[[], bool], work: Callable[[], Awaitable[Any]]
) -> None:
    """Run ``work`` (a call to a killable gateway) and ``kill()`` the gateway as soon as ``condition()`` holds."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(work)
        with anyio.fail_after(60):
            while not condition():
                await anyio.sleep(0.001)
        kill()
        tg.cancel_scope.cancel()


async def commit_then_kill(
    config: GatewayConfig, url: str, kill: Callable[[], None], intent_id: str, condition: Callable[[], bool]
) -> None:
    """A committer commits ``intent_id`` through the killable gateway at ``url``, killed once ``condition()``."""

    async def commit() -> None:
        async with http_client(url, token(config, "committer")) as client:
            await client.call_tool("intent_commit", {"intent_id": intent_id})

    await kill_when(kill, condition, commit)


@asynccontextmanager
async def http_client(url: str, bearer: str | None, mode: str = "auto", **kwargs: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode, **kwargs) as client,
    ):
        yield client


def stdio_server(config: GatewayConfig, bearer: str | None) -> StdioServerParameters:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("GATEWAY_TOKEN", None)
    if bearer is not None:
        env["GATEWAY_TOKEN"] = bearer
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "--config", str(config.source), "serve", "--stdio"], env=env
    )


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def add_role(config: GatewayConfig, name: str, tools: list[str], max_tier: int = 2, **extra: Any) -> None:
    """Add a role by adding a role file, as a user would."""
    role = {"name": name, "description": f"test role {name}", "tools": tools, "max_tier": max_tier, **extra}
    (config.roles / f"{name}.yaml").write_text(yaml.safe_dump(role))


@asynccontextmanager
async def inproc_client(gateway: Any, bearer: str, mode: str = "auto", **kwargs: Any) -> AsyncIterator[Client]:
    """A real SDK client connected in-process to the gateway's MCP server (the whole pipeline runs)."""
    from gateway.server import build_server

    async with gateway.running(), Client(build_server(gateway, token=bearer), mode=mode, **kwargs) as client:
        yield client


def ledger_rows(gateway: Any, kind: str = "call") -> list[Any]:
    return list(reversed(gateway.ledger.events("json_extract(body, '$.kind') = ?", (kind,))))


@asynccontextmanager
async def client_of(gateway: Any, bearer: str, mode: str = "auto", **kwargs: Any) -> AsyncIterator[Client]:
    """inproc_client's real SDK client, for a test that keeps its gateway running (``async with
    gateway.running()``) across its clients: one start (decision worker processes, recovery, loops: 0.4 s of CPU)
    for the whole test, not one per client. A gateway that is not running is started for this client alone."""
    from gateway.server import build_server

    if gateway.task_runner is None:
        async with inproc_client(gateway, bearer, mode, **kwargs) as client:
            yield client
    else:
        async with Client(build_server(gateway, token=bearer), mode=mode, **kwargs) as client:
            yield client
