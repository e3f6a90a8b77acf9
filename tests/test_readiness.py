"""`/readyz` fails, naming the dependency, when the policy on disk, the store or the sandbox is broken, while
`/healthz` stays liveness; `gateway sandbox check` names why bubblewrap cannot start; Prometheus metrics on
an opt-in endpoint, scraped. Real gateways, a real PostgreSQL, real bubblewrap around the probes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import BIN, http_client, http_gateway, reconfigure, token
from pg import PostgresServer

from gateway.config import GatewayConfig
from gateway.process import free_port, server_process

PROBE_WAIT_S = 60.0  # a reload is looked for once a second and a report kept two: wait for the condition


def readyz(url: str) -> tuple[int, dict[str, Any]]:
    answer = httpx2.get(f"{url}/readyz", timeout=30)
    return answer.status_code, answer.json()


def until(url: str, status: int) -> dict[str, Any]:
    """/readyz's body once it answers ``status`` (the report is kept two seconds, a policy looked at once a
    second): waits on the condition, with a generous bound."""
    deadline = time.monotonic() + PROBE_WAIT_S
    while True:
        code, body = readyz(url)
        if code == status:
            return body
        assert time.monotonic() < deadline, (code, body)
        time.sleep(0.2)


def not_ready_for(url: str, check: str) -> str:
    body = until(url, 503)
    assert body["status"] == "not ready" and not body["checks"][check]["ok"], body
    assert httpx2.get(f"{url}/healthz").status_code == 200, "liveness is not readiness"
    return next(reason for reason in body["reasons"] if reason.startswith(f"{check}: "))


def test_ready_names_each_dependency_and_a_broken_policy_on_disk_is_not(config: GatewayConfig) -> None:
    tiers = config.policy.path / "tiers" / "tiers.rego"
    with http_gateway(config.source) as url:
        code, body = readyz(url)
        assert code == 200 and body["status"] == "ready", body
        assert {name: check["ok"] for name, check in body["checks"].items()} == dict.fromkeys(
            ("policy", "sandbox", "store"), True
        )
        good = tiers.read_text()
        tiers.write_text(good + "\nthis is not rego\n")
        reason = not_ready_for(url, "policy")
        assert reason.startswith("policy: the policy on disk does not load: ") and "tiers.rego" in reason, reason
        assert "the last good one still decides" in reason
        tiers.write_text(good)
        until(url, 200)


def test_a_sqlite_store_gone_from_disk_is_not_ready(config: GatewayConfig) -> None:
    """The gateway's open connection still reads the file it opened; readiness opens the path afresh."""
    aside = config.store_path.with_name("moved-away.db")
    with http_gateway(config.source) as url:
        until(url, 200)
        config.store_path.rename(aside)
        try:
            reason = not_ready_for(url, "store")
        finally:
            aside.rename(config.store_path)
        assert reason.startswith(f"store: cannot open the store {config.store_path}"), reason
        until(url, 200)


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_postgresql_stopped_is_not_ready(config: GatewayConfig, postgres: PostgresServer) -> None:
    with http_gateway(config.source) as url:
        until(url, 200)
        postgres.stop()
        try:
            reason = not_ready_for(url, "store")
        finally:
            postgres.restart()
        assert "store: " in reason and "@127.0.0.1" in reason and postgres.password not in reason, reason
        until(url, 200)


def test_a_sandbox_binary_that_is_not_there_is_not_ready(config: GatewayConfig) -> None:
    missing = reconfigure(config, sandbox={"bwrap": "/nonexistent/bwrap"})
    with http_gateway(missing.source) as url:
        reason = not_ready_for(url, "sandbox")
    assert reason.startswith("sandbox: bubblewrap: '/nonexistent/bwrap' is not on PATH: install bubblewrap"), reason


def test_no_bwrap_on_path_is_not_ready(config: GatewayConfig, tmp_path: Path) -> None:
    """The gateway started where PATH has git and prlimit, but no bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("git", "prlimit"):
        found = shutil.which(tool)
        assert found
        (bin_dir / tool).symlink_to(found)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "gateway", "--config", str(config.source), "serve", "--http", f"127.0.0.1:{port}"]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{bin_dir}"}
    assert not (BIN / "bwrap").exists()
    with server_process(argv, f"{url}/healthz", "the gateway", log=tmp_path / "gw.log", env=env):
        reason = not_ready_for(url, "sandbox")
    assert reason.startswith("sandbox: bubblewrap: 'bwrap' is not on PATH"), reason


def test_sandbox_off_is_ready_and_says_so(config: GatewayConfig) -> None:
    with http_gateway(reconfigure(config, sandbox={"mode": "off"}).source) as url:
        body = until(url, 200)
    assert body["checks"]["sandbox"]["detail"].startswith("off (sandbox.mode: off)")


# --- why bubblewrap cannot start, named (real bubblewrap around the probe) ---------------------------------


PROJECT = Path(__file__).resolve().parent.parent
MASKED_PROC = ["--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--tmpfs", "/proc/fs"]


def inside(bwrap_args: list[str], config: GatewayConfig, *argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` run inside a bubblewrap sandbox made to lack what a container may lack."""
    wrap = ["bwrap", *bwrap_args, "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(config.state), str(config.state)]
    wrap += ["--ro-bind", str(PROJECT), str(PROJECT)]  # its venv and sources, even in a clone under /tmp
    return subprocess.run([*wrap, *argv], capture_output=True, text=True, timeout=120)


def sandbox_check_inside(bwrap_args: list[str], config: GatewayConfig) -> subprocess.CompletedProcess[str]:
    """`gateway sandbox check` where the sandbox lacks something."""
    check = ["-m", "gateway", "--config", str(config.source), "sandbox", "check", "--json"]
    return inside(bwrap_args, config, sys.executable, *check)


def failed_step(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 1, done.stderr
    assert "the sandbox cannot start here" in done.stderr
    steps = json.loads(done.stdout)
    assert [s["ok"] for s in steps] == [True] * (len(steps) - 1) + [False], steps
    return steps[-1]


def test_no_user_namespaces_is_named(config: GatewayConfig) -> None:
    done = sandbox_check_inside(
        ["--unshare-user", "--disable-userns", "--ro-bind", "/", "/", "--proc", "/proc"], config
    )
    step = failed_step(done)
    assert step["step"] == "user namespace" and "no more user namespaces may be made from here" in step["detail"]


def test_a_masked_proc_is_named_with_the_options_that_unmask_it(config: GatewayConfig) -> None:
    """What Docker and podman do to a container's /proc: paths mounted over. The kernel then refuses the
    sandbox a /proc of its own (seccomp=unconfined does not change that)."""
    step = failed_step(sandbox_check_inside(MASKED_PROC, config))
    assert step["step"] == "/proc" and "Can't mount proc" in step["detail"] and "/proc/fs" in step["detail"]
    assert "podman run --security-opt unmask=/proc/*" in step["detail"]
    assert "docker run --security-opt systempaths=unconfined" in step["detail"]


def test_everything_there_passes_every_step(config: GatewayConfig) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "--config", str(config.source), "sandbox", "check", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)
    assert [s["step"] for s in steps] == ["bubblewrap", "user namespace", "/proc", "network", "the sandbox"]
    assert all(s["ok"] for s in steps)


def test_the_image_entrypoint_names_what_is_missing_before_serving(config: GatewayConfig) -> None:
    """The Dockerfile's ENTRYPOINT: a command that serves is not started where the sandbox cannot start."""
    serve = f"gateway --config {config.source} serve --http 0.0.0.0:8787 && echo SERVED"
    refused = inside(MASKED_PROC, config, sys.executable, "-m", "gateway.entrypoint", "sh", "-c", serve)
    assert refused.returncode == 1 and "SERVED" not in refused.stdout, refused.stderr
    said = refused.stderr.splitlines()
    assert said[0].startswith("gateway sandbox: ok    bubblewrap")
    assert said[-2].startswith("gateway sandbox: FAIL  /proc") and "unmask=/proc/*" in said[-2]
    assert said[-1].startswith("gateway entrypoint: not serving: the sandbox cannot start in this container")
    other = inside(MASKED_PROC, config, sys.executable, "-m", "gateway.entrypoint", "echo", "gateway", "token")
    assert (other.returncode, other.stdout) == (0, "gateway token\n"), "other commands run as given"


def test_the_image_entrypoint_serves_where_the_sandbox_starts(config: GatewayConfig) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway.entrypoint", "sh", "-c", f"echo gateway --config {config.source} serve"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == f"gateway --config {config.source} serve\n", done.stderr
    assert "FAIL" not in done.stderr and "the sandbox" in done.stderr


# --- metrics ------------------------------------------------------------------------------------------


@contextmanager
def scraped(config: GatewayConfig, **metrics: Any) -> Iterator[tuple[str, Callable[..., str]]]:
    enabled = reconfigure(config, metrics={"enabled": True, **metrics})
    with http_gateway(enabled.source) as url:

        def scrape(**headers: str) -> str:
            answer = httpx2.get(f"{url}/metrics", headers=headers)
            assert answer.status_code == 200, answer.text
            assert answer.headers["content-type"].startswith("text/plain; version=")
            return answer.text

        yield url, scrape


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one series in a Prometheus exposition, or None when it is not there."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


def test_metrics_count_calls_decisions_latency_and_pending_approvals(config: GatewayConfig) -> None:
    bearer = token(config, "developer", agent="m1")

    async def calls(url: str) -> None:
        async with http_client(url, bearer) as client:
            await client.call_tool("fs_read", {"path": "README.md"})
            await client.call_tool("fs_read", {"path": "README.md"})
            await client.call_tool("shell_run", {"command": "cat /etc/hostname"})  # tier 3: a pending approval

    with scraped(config) as (url, scrape):
        before = scrape()
        assert sample(before, "gateway_approvals_pending") == 0.0
        anyio.run(calls, url)
        check = ["check", "--role", "worker", "--tool", "fs_write", "--args", '{"path": "a", "content": ""}']
        subprocess.run([sys.executable, "-m", "gateway", "--config", str(config.source), *check], timeout=60)
        after = scrape()
    assert sample(after, "gateway_calls_total", kind="call", outcome="ok") == 2.0
    assert sample(after, "gateway_calls_total", kind="call", outcome="asked") == 1.0
    assert sample(after, "gateway_calls_total", kind="check", outcome="denied") == 1.0
    assert sample(after, "gateway_decisions_total", action="allow", tier="1", rule="tiers.read") == 2.0
    assert sample(after, "gateway_decisions_total", action="ask", tier="3", rule="paths.outside_workspace") == 1.0
    assert sample(after, "gateway_call_duration_seconds_count", kind="call", outcome="ok") == 2.0
    assert (sample(after, "gateway_call_duration_seconds_sum", kind="call", outcome="ok") or 0) > 0
    assert sample(after, "gateway_approvals_pending") == 1.0
    assert sample(after, "gateway_merge_queue_depth") == 0.0


def test_metrics_need_the_token_when_one_is_set(config: GatewayConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METRICS_TOKEN", "scrape-secret-1")
    with scraped(config, token="${METRICS_TOKEN}") as (url, scrape):
        assert httpx2.get(f"{url}/metrics").status_code == 401
        assert httpx2.get(f"{url}/metrics", headers={"authorization": "Bearer nope"}).status_code == 401
        assert "gateway_approvals_pending" in scrape(authorization="Bearer scrape-secret-1")


def test_metrics_are_off_by_default_and_prometheus_client_is_not_imported(config: GatewayConfig) -> None:
    with http_gateway(config.source) as url:
        assert httpx2.get(f"{url}/metrics").status_code == 404
    probe = (
        "import sys; from gateway.config import GatewayConfig; from gateway.runtime import Gateway; "
        "from gateway.server import http_app; "
        f"http_app(Gateway(GatewayConfig.load({str(config.source)!r}))); "
        "print('prometheus_client' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
