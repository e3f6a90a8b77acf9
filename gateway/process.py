"""Server subprocesses on 127.0.0.1: start one, wait until it answers its health URL, stop it.

Used by ``gateway demo``, the tests and the benchmark, which all run real servers in real processes.

    with server_process([sys.executable, "-m", "gateway", "serve", "--http", f"127.0.0.1:{port}"],
                        f"http://127.0.0.1:{port}/healthz", "the gateway", log=Path("gw.log")) as proc:
        ...
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


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
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stderr going to ``log``; return once ``health_url`` answers 200."""
    if log is None:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    else:
        with log.open("w") as stderr:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}{_tail(log)}")
        try:
            with urllib.request.urlopen(health_url, timeout=1) as response:
                if response.status == 200:
                    return proc
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_server(proc)
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
