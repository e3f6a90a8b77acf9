"""The MCP Inspector CLI (npm @modelcontextprotocol/inspector --cli) lists and calls tools through the gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from conftest import BIN, NPM_MODULES, http_gateway, token

INSPECTOR = NPM_MODULES / ".bin" / "inspector"
pytestmark = pytest.mark.skipif(not INSPECTOR.exists(), reason="run `make test` to install the Inspector CLI")


def inspector(*args: str, cwd: Any = None) -> dict[str, Any]:
    proc = subprocess.run(
        [str(INSPECTOR), "--cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"),
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def test_inspector_over_stdio(config: Any) -> None:
    bearer = token(config, "planner", agent="inspector")
    # the Inspector reads --config itself, so the gateway finds ./gateway.yaml in its working directory
    target = [sys.executable, "-m", "gateway", "serve", "--stdio", "-e", f"GATEWAY_TOKEN={bearer}"]
    workspace = config.source.parent
    names = {t["name"] for t in inspector(*target, "--method", "tools/list", cwd=workspace)["tools"]}
    assert {"fs_read", "fs_search", "git_log"} <= names and "fs_write" not in names
    called = inspector(
        *target, "--method", "tools/call", "--tool-name", "fs_read", "--tool-arg", "path=README.md", cwd=workspace
    )
    assert called["content"][0]["text"] == "# demo repo\n" and called["isError"] is False


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_over_http(config: Any, era: str) -> None:
    bearer = token(config, "planner", agent="inspector")
    with http_gateway(config.source) as url:
        common = [f"{url}/mcp", "--header", f"Authorization: Bearer {bearer}", "--protocol-era", era]
        listed = inspector(*common, "--method", "tools/list")
        assert "fs_read" in {t["name"] for t in listed["tools"]}
        called = inspector(
            *common, "--method", "tools/call", "--tool-name", "fs_search", "--tool-arg", "pattern=answer"
        )
        assert "src/app.py:1:" in called["content"][0]["text"]
