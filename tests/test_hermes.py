"""The real Hermes Agent (PyPI hermes-agent[mcp] 0.19.0, `hermes -z`, headless) as an MCP client of the gateway,
driven by a scripted model (tests/servers/scripted_anthropic.py, which Hermes speaks to as its Anthropic provider).

The MCP entry is examples/hermes/config.yaml as a user merges it into ~/.hermes/config.yaml, the gateway's URL
and a token filled in; Hermes runs in a temporary HOME with a dummy API key. What Hermes sends, as measured
here: clientInfo.name "mcp" (the MCP Python SDK's default, so `pending_clients: ["hermes*"]` never matches),
the elicitation capability (on by default), and a headless run declines every elicitation.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, http_gateway, ledger_rows, reconfigure, token
from servers.scripted_anthropic import ScriptedModel, text, tool_use

from gateway.config import GatewayConfig
from gateway.process import gateway_cli
from gateway.runtime import Gateway

HERMES = Path(os.environ.get("GATEWAY_TEST_HERMES", ROOT / ".venv" / "hermes" / "bin" / "hermes"))
EXAMPLE = ROOT / "examples" / "hermes" / "config.yaml"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not HERMES.exists(), reason="run `make test` to install Hermes Agent from PyPI"),
]

HELD = {"command": "cat /etc/hostname > host.txt"}  # reads outside the workspace: tier 3, a person decides
TOOL = "mcp__gateway__shell_run"  # how Hermes offers the gateway's shell_run to its model


def hermes(
    repo: Path, home: Path, model: str, gateway_url: str, bearer: str, server: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    """`hermes -z` in ``repo`` with the example's MCP entry pointed at the gateway (plus ``server`` settings)."""
    example = yaml.safe_load(EXAMPLE.read_text())
    entry = example["mcp_servers"]["gateway"]
    entry["url"] = f"{gateway_url}/mcp"
    entry["headers"]["Authorization"] = entry["headers"]["Authorization"].replace("PASTE_GATEWAY_TOKEN_HERE", bearer)
    entry.update(server or {})
    settings = {**example, "model": {"provider": "anthropic", "default": "claude-scripted-1"}}
    (home / ".hermes").mkdir(parents=True, exist_ok=True)
    (home / ".hermes" / "config.yaml").write_text(yaml.safe_dump(settings))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_API_KEY": "sk-ant-scripted-model-dummy",
        "ANTHROPIC_BASE_URL": model,
    }
    argv = [str(HERMES), "-z", "Run the scripted calls.", "-t", "gateway"]
    return subprocess.run(
        argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )


def said(model: ScriptedModel, turn: int) -> str:
    """What Hermes told the model the call of ``turn`` answered."""
    block = model.tool_results[f"toolu_script_{turn}_0"]
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)


def approve_pending(config: GatewayConfig) -> Callable[[], None]:
    """A person, between two turns: `gateway approvals approve` on the one pending approval."""

    def approve() -> None:
        pending = Gateway(config).approvals.list(state="pending")
        assert len(pending) == 1, pending
        done = gateway_cli(config, "approvals", "approve", pending[0]["id"], "--comment", "hostname only")
        assert done.returncode == 0, done.stderr

    return approve


def test_headless_hermes_waits_for_a_person_and_runs_the_call_once_approved(
    config: GatewayConfig, repo: Path, tmp_path: Path
) -> None:
    """The default: no role's client is a person (approvals.interactive_roles is empty), so Hermes gets no
    elicitation to decline. The held call answers "approval pending" (a result, not an error: Hermes does not
    count it toward its three-failures lockout); a person approves; the same call, retried, runs once."""
    bearer = token(config, "developer", agent="hermes-1")
    script = [[tool_use(TOOL, HELD)], [tool_use(TOOL, HELD)], [text("The held call ran after approval.")]]
    model = ScriptedModel(script, before_turn={1: approve_pending(config)})
    with model.serve(), http_gateway(config.source) as url:
        done = hermes(repo, tmp_path / "home", model.url, url, bearer)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "The held call ran after approval." in done.stdout

    first = said(model, 0)
    assert "approval_pending" in first and "gateway approvals approve ap-" in first, first
    assert '"error"' not in first, "a pending approval is no failure for Hermes"
    assert (repo / "host.txt").read_text() == Path("/etc/hostname").read_text()

    rows = [r for r in ledger_rows(Gateway(config)) if r.outcome != "started"]
    assert [(r.tool, r.outcome) for r in rows] == [("shell_run", "asked"), ("shell_run", "ok")]
    assert rows[1].detail["approval"]["answer"] == "approved"
    assert {r.detail["client"] for r in rows} == {"mcp"}, "what Hermes sends as clientInfo.name"
    assert rows[0].principal["agent"] == "hermes-1"


HERMES_DEFAULT = {"elicitation": {"enabled": True}}  # Hermes' own default, which the example turns off


@pytest.mark.parametrize(
    ("approvals", "server", "outcome"),
    [
        ({"interactive_roles": ["developer"]}, HERMES_DEFAULT, "denied"),  # the trap: headless Hermes declines
        ({"interactive_roles": ["developer"], "pending_clients": ["mcp"]}, HERMES_DEFAULT, "asked"),  # by name
        ({"interactive_roles": ["developer"]}, {}, "asked"),  # examples/hermes/config.yaml: elicitation off
    ],
    ids=["interactive-role", "pending-clients-mcp", "the-example-config"],
)
def test_a_role_marked_interactive_needs_hermes_kept_off_elicitation(
    config: GatewayConfig,
    repo: Path,
    tmp_path: Path,
    approvals: dict[str, Any],
    server: dict[str, Any],
    outcome: str,
) -> None:
    """A role gateway.yaml lists in interactive_roles is asked by elicitation; headless Hermes declines it,
    a denial. Either advice keeps the call waiting for a person: `pending_clients: ["mcp"]` (what Hermes
    sends) or the example's `elicitation: {enabled: false}` in Hermes' own config."""
    config = reconfigure(config, approvals=approvals)
    bearer = token(config, "developer", agent="hermes-1")
    script = [[tool_use(TOOL, HELD)], [text("finished")]]
    with ScriptedModel(script).serve() as model, http_gateway(config.source) as url:
        done = hermes(repo, tmp_path / "home", model.url, url, bearer, server)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [r for r in ledger_rows(Gateway(config)) if r.outcome != "started"]
    assert [(r.tool, r.outcome) for r in rows] == [("shell_run", outcome)]
    answer = said(model, 0)
    if outcome == "denied":
        assert "declined" in answer and rows[0].detail["approval"]["answer"] == "denied", answer
    else:
        assert "approval_pending" in answer, answer
        assert len(Gateway(config).approvals.list(state="pending")) == 1
    assert not (repo / "host.txt").exists()
