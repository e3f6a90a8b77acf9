"""Deployment: the Host values served come from gateway.yaml; the Dockerfile is checked by reading."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2
from conftest import http_gateway, reconfigure, token

ROOT = Path(__file__).resolve().parents[1]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_allowed_hosts_from_config(config: Any) -> None:
    config = reconfigure(config, allowed_hosts=["gateway.internal:*"])
    bearer = {"Authorization": f"Bearer {token(config, 'developer')}"}
    with http_gateway(config.source) as url:
        port = url.rsplit(":", 1)[1]
        named = httpx2.post(
            f"{url}/mcp", json=INITIALIZE, headers={**HEADERS, **bearer, "Host": f"gateway.internal:{port}"}
        )
        other = httpx2.post(
            f"{url}/mcp", json=INITIALIZE, headers={**HEADERS, **bearer, "Host": f"evil.example:{port}"}
        )
        health = httpx2.get(f"{url}/healthz")
    assert named.status_code == 200
    assert other.status_code == 421  # DNS-rebinding protection: a Host nobody configured
    assert health.status_code == 200


def test_dockerfile_by_reading() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^FROM (\S+)", dockerfile, re.M)
    assert base and re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base.group(1))
    assert re.search(r"^HEALTHCHECK .*\n?.*/healthz", dockerfile, re.M)
    assert "bubblewrap" in dockerfile and "safe.directory /workspace" in dockerfile
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "tests"} <= ignored
    for source in re.findall(r"^COPY (.+) \S+$", dockerfile, re.M):
        for name in source.split():
            assert (ROOT / name).exists(), f"COPY {name}: not in the repository"
            assert name not in ignored, f"COPY {name}: excluded by .dockerignore"
