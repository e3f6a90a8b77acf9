"""`gateway check` and `gateway hook claude-code` asked of a running gateway (gateway/fast.py, gateway/local_http.py):
the same answers and exit codes as deciding in-process, the in-process path when no gateway answers, and neither
an impostor on the port nor a request without the local secret gets anywhere. Real commands, a real gateway."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
from conftest import http_gateway, ledger_rows, token

from gateway.config import GatewayConfig
from gateway.fast import SERVING_FILE
from gateway.process import free_port
from gateway.runtime import Gateway

# allow, ask (reads outside the workspace: tier 3), deny (a worker without a claim writing)
CASES = [
    ("developer", "fs_read", {"path": "README.md"}, 0),
    ("developer", "shell_run", {"command": "cat /etc/hostname"}, 3),
    ("worker", "fs_write", {"path": "x.txt", "content": "x"}, 4),
]
# the probe: run the command in this interpreter, then say whether it loaded pydantic (the in-process path does)
PROBE = """
import runpy, sys
sys.argv = ["gateway", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("gateway", run_name="__main__")
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nin-process\\n" if "pydantic" in sys.modules else "\\nasked the gateway\\n")
sys.exit(code)
"""


def gateway(config: GatewayConfig, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> Any:
    argv = [sys.executable, "-c", PROBE, "--config", str(config.source), *args]
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, env=env)


def path_of(done: subprocess.CompletedProcess[str]) -> str:
    return done.stderr.strip().splitlines()[-1]


def check(config: GatewayConfig, role: str, tool: str, arguments: dict[str, Any]) -> Any:
    return gateway(config, "check", "--role", role, "--tool", tool, "--args", json.dumps(arguments))


def hook_event(config: GatewayConfig, command: str) -> str:
    event = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}}
    return json.dumps({**event, "cwd": str(config.workspace), "session_id": "s-1"})


def test_check_answers_the_same_through_a_running_gateway(config: GatewayConfig) -> None:
    alone = [check(config, role, tool, arguments) for role, tool, arguments, _ in CASES]
    with http_gateway(config.source):
        served = [check(config, role, tool, arguments) for role, tool, arguments, _ in CASES]
        unknown = check(config, "developer", "fs_raed", {})
    for (_, tool, _, code), own, asked in zip(CASES, alone, served, strict=True):
        assert (own.returncode, path_of(own)) == (code, "in-process"), own.stderr
        assert (asked.returncode, path_of(asked)) == (code, "asked the gateway"), asked.stderr
        assert json.loads(asked.stdout) == json.loads(own.stdout), tool
    assert unknown.returncode == 2 and path_of(unknown) == "asked the gateway"
    assert (
        unknown.stderr.splitlines()[0] == "gateway: unknown tool 'fs_raed' (did you mean fs_read, fs_edit, fs_write?)"
    )
    rows = ledger_rows(Gateway(config), kind="check")
    assert len(rows) == 2 * len(CASES) + 1, "every check is recorded, whoever decided it"


def test_the_hook_answers_the_same_and_an_approval_binds_to_the_command_hook(config: GatewayConfig) -> None:
    """A tier-3 call held while the gateway answers the command hook is approved once, for the command hook:
    the same call then runs whether the running gateway or the command itself decides."""
    held = hook_event(config, "cat /etc/hostname")
    with http_gateway(config.source):
        asked = gateway(config, "hook", "claude-code", "--role", "developer", stdin=held)
        assert path_of(asked) == "asked the gateway", asked.stderr
        answer = json.loads(asked.stdout)["hookSpecificOutput"]
        assert (
            answer["permissionDecision"] == "deny"
            and "gateway approvals approve ap-" in answer["permissionDecisionReason"]
        )
        approval = Gateway(config).approvals.list(state="pending")[0]
        assert approval["channel"] == "hook:command"
        Gateway(config).approvals.settle(approval["id"], True, by="person")
    alone = gateway(config, "hook", "claude-code", "--role", "developer", stdin=held)
    assert path_of(alone) == "in-process"
    assert json.loads(alone.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow", alone.stdout
    rows = [r for r in ledger_rows(Gateway(config), kind="hook")]
    assert [r.outcome for r in rows] == ["asked", "allowed"]


def test_the_hook_decides_as_its_token(config: GatewayConfig) -> None:
    bearer = token(config, "developer", agent="cc-7")
    env = {"PATH": "/usr/bin:/bin", "GATEWAY_TOKEN": bearer}
    with http_gateway(config.source):
        done = gateway(config, "hook", "claude-code", "--role", "worker", stdin=hook_event(config, "ls"), env=env)
        forged = gateway(
            config, "hook", "claude-code", stdin=hook_event(config, "ls"), env={**env, "GATEWAY_TOKEN": "e30.e30.x"}
        )
    assert path_of(done) == "asked the gateway" and path_of(forged) == "asked the gateway"
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert json.loads(forged.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    rows = ledger_rows(Gateway(config), kind="hook")
    assert rows[0].principal["agent"] == "cc-7" and rows[0].principal["role"] == "developer"


def test_no_gateway_listening_means_deciding_in_process(config: GatewayConfig) -> None:
    """A gateway that was killed leaves its serving.json behind: nothing listens there any more."""
    with http_gateway(config.source):
        record = json.loads((config.state / SERVING_FILE).read_text())
    (config.state / SERVING_FILE).write_text(json.dumps({**record, "url": f"http://127.0.0.1:{free_port()}"}))
    done = check(config, "worker", "fs_write", {"path": "x.txt", "content": "x"})
    assert (done.returncode, path_of(done)) == (4, "in-process"), done.stderr


@contextmanager
def impostor() -> Iterator[str]:
    """What an agent could start on the port once the gateway stopped: it answers "allow" to everything."""

    class AllowAll(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            body = json.dumps({"action": "allow", "tier": 1, "reasons": [], "rules": [], "effects": None}).encode()
            self.send_response(200)
            self.send_header("x-gateway-local-answer", "0" * 64)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), AllowAll)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_an_impostor_on_the_port_is_not_believed(config: GatewayConfig) -> None:
    with http_gateway(config.source):
        record = json.loads((config.state / SERVING_FILE).read_text())
    with impostor() as url:
        (config.state / SERVING_FILE).write_text(json.dumps({**record, "url": url}))
        done = check(config, "worker", "fs_write", {"path": "x.txt", "content": "x"})
    assert (done.returncode, path_of(done)) == (4, "in-process"), done.stderr
    assert f"{url} answered without this gateway's proof" in done.stderr


def test_another_config_is_not_answered_by_this_gateway(config: GatewayConfig) -> None:
    """The same settings in another file: the command may run with another environment, so it decides itself."""
    assert config.source is not None
    other = config.source.with_name("other.yaml")
    other.write_text(config.source.read_text())
    with http_gateway(config.source):
        done = gateway(config, "--config", str(other), "check", "--role", "developer", "--tool", "fs_read")
    assert path_of(done) == "in-process", done.stderr


def test_a_request_without_the_local_secret_is_refused_and_recorded(config: GatewayConfig) -> None:
    import time

    body = {"role": "admin", "agent": "x", "tool": "fs_read", "arguments": {"path": "README.md"}}
    forged = [None, "v1 0 00 00", f"v1 {int(time.time())} 00 {'0' * 64}"]  # none, too old, a wrong MAC
    with http_gateway(config.source) as url:
        answers = [
            httpx2.post(f"{url}/local/check", json=body, headers={"x-gateway-local": h} if h else {}) for h in forged
        ]
    for answer in answers:
        assert answer.status_code == 403 and "x-gateway-local-answer" not in answer.headers
    refused = ledger_rows(Gateway(config), kind="auth")
    assert [(r.outcome, r.detail["where"]) for r in refused] == [("denied", "/local/check")] * len(forged)
    assert not ledger_rows(Gateway(config), kind="check"), "nothing was decided"
