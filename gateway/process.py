"""The ``gateway`` command and server subprocesses on 127.0.0.1 (start one, wait for its health URL, stop it).

Used by ``gateway demo``, the tests and the benchmark, which all run real commands and servers in real processes.

    done = gateway_cli(config, "ledger", "verify")                 # as a person runs it, against config

    with server_process([sys.executable, "-m", "gateway", "serve", "--http", f"127.0.0.1:{port}"],
                        f"http://127.0.0.1:{port}/healthz", "the gateway", log=Path("gw.log")) as proc:
        ...
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from gateway.config import GatewayConfig


def gateway_cli(config: GatewayConfig, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``gateway --config CONFIG ARGS...`` as a person would; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "gateway", "--config", str(config.source), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    argv: list[str],
    health_url: str,
    what: str,
    log: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    new_session: bool = False,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stderr going to ``log``; return once ``health_url`` answers 200. ``new_session``:
    in its own process group, so that ``os.killpg`` stops it with every child it started."""
    if log is None:
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=new_session
        )
    else:
        with log.open("w") as stderr:
            proc = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=stderr, env=env, start_new_session=new_session
            )
    try:
        _wait_until_healthy(proc, health_url, what, log, timeout)
    except BaseException:  # never leave the child behind: a timeout, a crash, Ctrl-C
        stop_server(proc)
        raise
    return proc


# a proxy configured in the environment must not see (or break) calls to 127.0.0.1
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _wait_until_healthy(
    proc: subprocess.Popen[bytes], health_url: str, what: str, log: Path | None, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}{_tail(log)}")
        try:
            with _DIRECT.open(health_url, timeout=1) as response:
                if response.status == 200:
                    return
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer {health_url} within {timeout:.0f} s{_tail(log)}")
        time.sleep(0.1)


def _tail(log: Path | None) -> str:
    return f"; its log ({log}):\n{log.read_text()[-4000:]}" if log else ""


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def server_process(
    argv: list[str],
    health_url: str,
    what: str,
    log: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> Iterator[subprocess.Popen[bytes]]:
    proc = start_server(argv, health_url, what, log=log, env=env, timeout=timeout)
    try:
        yield proc
    finally:
        stop_server(proc)
