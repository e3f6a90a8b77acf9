"""The command line for people: help for everything, exit codes, --json and --explain, tables on a terminal,
no traceback on a closed pipe, clear errors, one base for relative paths, and a cold start that imports only
what the command needs. Every test runs the real ``gateway`` command in a subprocess."""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import make_repo, workspace_for_tests

from gateway.cli import EXIT_ASK, EXIT_BUG, EXIT_DENY, EXIT_ERROR, EXIT_FAILED, build_parser, commands, main
from gateway.cli.parser import OUTCOMES
from gateway.config import GatewayConfig
from gateway.decision_log import read_entries
from gateway.ledger.chain import Ledger
from gateway.listen import parse_listen
from gateway.process import free_port, server_process
from gateway.types import FILTER_OUTCOMES


def gateway(config: GatewayConfig | Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    source = config if isinstance(config, Path) else config.source
    argv = [sys.executable, "-m", "gateway", "--config", str(source), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd)


def on_a_terminal(config: GatewayConfig, *args: str) -> str:
    """What a person sees: the command with its stdout on a pseudo-terminal."""
    main, secondary = pty.openpty()
    argv = [sys.executable, "-m", "gateway", "--config", str(config.source), *args]
    with subprocess.Popen(argv, stdout=secondary, stderr=subprocess.PIPE) as proc:
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal closed: the command is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(60)
    os.close(main)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> GatewayConfig:
    return workspace_for_tests(make_repo(tmp_path_factory.mktemp("cli") / "repo"))


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gateway: "), result.stderr
    return lines[0]


# --- help ------------------------------------------------------------------------------------------


def parsers(parser: argparse.ArgumentParser, path: str = "gateway") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += parsers(sub, f"{path} {name}")
    return found


def test_every_command_and_option_has_help_and_every_command_an_example() -> None:
    every = parsers(build_parser())
    assert len(every) > 25
    for path, parser in every:
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                assert action.help, f"{path} {'/'.join(action.option_strings) or action.dest} has no help"
        if path != "gateway":
            assert parser.description, f"{path} has no description"
            assert "examples:\n  " in (parser.epilog or "") and "gateway " in parser.epilog, f"{path} has no example"
    shown = subprocess.run([sys.executable, "-m", "gateway", "check", "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and "--explain" in shown.stdout and "examples:" in shown.stdout
    assert OUTCOMES == FILTER_OUTCOMES  # the parser's copy, kept so that --help loads no pydantic


# --- gateway check -------------------------------------------------------------------------------------


def test_check_exit_codes_tell_allow_ask_and_deny_apart(config: GatewayConfig) -> None:
    read = gateway(config, "check", "--role", "developer", "--tool", "fs_read", "--args", '{"path": "README.md"}')
    asked = gateway(config, "check", "--role", "developer", "--tool", "shell_run", "--args", '{"command": "sudo id"}')
    denied = gateway(config, "check", "--role", "developer", "--tool", "fs_read", "--args", '{"path": "/etc/shadow"}')
    assert [read.returncode, asked.returncode, denied.returncode] == [0, 3, 4], (read.stderr, asked.stderr)
    assert [json.loads(r.stdout)["action"] for r in (read, asked, denied)] == ["allow", "ask", "deny"]
    assert set(json.loads(read.stdout)) == {"action", "tier", "reasons", "rules", "effects", "revision"}, (
        "today's JSON shape"
    )


def test_check_is_recorded_in_the_ledger_and_the_decision_log(tmp_path: Path) -> None:
    """`gateway check` is judged by the same stages as a tools/call, and lands where every decision does."""
    config = workspace_for_tests(make_repo(tmp_path / "repo"))
    command = "sed -i s/41/42/ src/app.py"
    checked = gateway(
        config, "check", "--role", "developer", "--tool", "shell_run", "--args", json.dumps({"command": command})
    )
    assert checked.returncode == 0, checked.stderr
    rows = Ledger.for_config(config).events("json_extract(body, '$.kind') = ?", ("check",))
    assert [(row.tool, row.decision["action"]) for row in rows] == [("shell_run", "allow")]
    entries = [e for e in read_entries(config.decision_log_path) if e.get("call_id") == rows[0].call_id]
    assert [(e["input"]["tool"]["name"], e["result"]["action"]) for e in entries] == [("shell_run", "allow")]
    assert (config.workspace / "src" / "app.py").read_text().endswith("41\n"), "a check runs nothing"


def test_check_explain_prints_the_input_document_and_the_rules_fired(config: GatewayConfig) -> None:
    args = ["check", "--role", "developer", "--tool", "shell_run", "--args", '{"command": "rm -rf src"}', "--explain"]
    report = json.loads(gateway(config, *args, "--json").stdout)
    assert report["input"]["version"] == 2 and report["input"]["tool"]["name"] == "shell_run"
    assert report["input"]["effects"]["recursive_deletes"] == ["src"]
    assert report["fired"][0] == {
        "effect": "tier 3",
        "rule": "tiers.mass_delete",
        "reason": "deletes recursively or by pattern: src",
    }
    assert {"effect": "tier 1", "rule": "roles.granted"}.items() <= report["fired"][-1].items()
    shown = on_a_terminal(config, *args)
    assert shown.startswith("ASK (a person approves)  tier 3  shell_run as cli (developer)")
    assert "rules fired:" in shown and "roles.granted" in shown and '"version": 2' in shown


def test_check_on_a_terminal_reads_as_text(config: GatewayConfig) -> None:
    shown = on_a_terminal(
        config, "check", "--role", "planner", "--tool", "fs_read", "--args", '{"path": "/etc/passwd"}'
    )
    assert shown.splitlines()[0] == "DENY  tier 3  fs_read as cli (planner)"
    assert "rules    gateway.path_outside_workspace" in shown and not shown.lstrip().startswith("{")


def test_unknown_role_tool_and_file_are_one_clear_line(config: GatewayConfig, tmp_path: Path) -> None:
    role = one_error_line(gateway(config, "check", "--role", "nosuch", "--tool", "fs_read"))
    assert role.startswith("gateway: unknown role 'nosuch' (known: admin, committer, developer, planner")
    issued = one_error_line(gateway(config, "token", "issue", "--role", "nosuch", "--agent", "a"))
    assert issued == role
    tool = one_error_line(gateway(config, "check", "--role", "developer", "--tool", "fs_raed"))
    assert tool.startswith("gateway: unknown tool 'fs_raed' (did you mean fs_read")
    task = one_error_line(gateway(config, "task", "show", "T-nope"))
    assert "no task 'T-nope'" in task
    missing = one_error_line(gateway(config, "policy", "eval", "--input", str(tmp_path / "none.json")))
    assert "cannot read the input document" in missing
    no_config = one_error_line(gateway(tmp_path / "gateway.yaml", "task", "list"))
    assert "no config at" in no_config


# --- tables and blocks ---------------------------------------------------------------------------------


def test_lists_are_tables_on_a_terminal_and_json_otherwise(config: GatewayConfig, tmp_path: Path) -> None:
    manifest = {"task_id": "T1", "objective": "fix it", "allowed_paths": ["src/**"], "verification": ["true"]}
    (tmp_path / "t1.yaml").write_text(yaml.safe_dump(manifest))
    assert gateway(config, "task", "submit", str(tmp_path / "t1.yaml")).returncode == 0
    tasks = on_a_terminal(config, "task", "list").splitlines()
    assert tasks[0].split() == ["TASK", "STATE", "READY", "ATTEMPT", "OWNER", "WAITING", "FOR", "OBJECTIVE"]
    assert tasks[1].split()[:3] == ["T1", "open", "yes"] and tasks[1].endswith("fix it")
    assert json.loads(gateway(config, "task", "list").stdout)["tasks"][0]["task_id"] == "T1"
    shown = on_a_terminal(config, "task", "show", "T1")
    assert "objective" in shown and "allowed paths  src/**" in shown
    assert on_a_terminal(config, "approvals", "list").strip().startswith("no pending approvals")
    assert json.loads(gateway(config, "approvals", "list").stdout) == []
    keys = on_a_terminal(config, "keys", "list").splitlines()
    assert keys[0].split() == ["KID", "USE"] and keys[1].endswith("signs and verifies")


def test_a_manifest_written_as_people_write_yaml_is_accepted(config: GatewayConfig, tmp_path: Path) -> None:
    natural = (
        "schema_version: 1\ntask_id: Y1\nobjective: fix it\nallowed_paths: [src/**]\nverification: ['true']\n"
        "deadline: 2030-11-23T18:00:00Z\n"
    )
    (tmp_path / "t1.yaml").write_text(natural)
    submitted = gateway(config, "task", "submit", str(tmp_path / "t1.yaml"))
    assert submitted.returncode == 0, submitted.stderr
    amendment = natural.replace("fix it", "fix it well").replace("18:00:00Z", "19:30:00+01:00")
    (tmp_path / "t1-v2.yaml").write_text(amendment)
    amended = gateway(config, "task", "amend", "Y1", str(tmp_path / "t1-v2.yaml"))
    assert amended.returncode == 0, amended.stderr
    manifest = json.loads(gateway(config, "task", "show", "Y1").stdout)["manifest"]
    assert (manifest["deadline"], manifest["schema_version"]) == ("2030-11-23T19:30:00+01:00", "1")
    # still validated: a date without a time zone, or another schema version, is refused with the field named
    (tmp_path / "t2.yaml").write_text(natural.replace("Y1", "T2").replace("2030-11-23T18:00:00Z", "2030-11-23"))
    assert "deadline needs a time zone" in one_error_line(gateway(config, "task", "submit", str(tmp_path / "t2.yaml")))
    (tmp_path / "t3.yaml").write_text(natural.replace("Y1", "T3").replace("schema_version: 1", "schema_version: 2"))
    assert "schema_version" in one_error_line(gateway(config, "task", "submit", str(tmp_path / "t3.yaml")))


# --- mistakes people make: a clear line and a documented code, never a traceback ----------------------


@pytest.mark.parametrize("value", ["8787x", "localhost", "99999", "127.0.0.1:", ":8787", "0"])
def test_serve_http_junk_is_a_usage_error(config: GatewayConfig, value: str) -> None:
    done = gateway(config, "serve", "--http", value)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("usage: gateway serve") and "expected HOST:PORT" in done.stderr


def test_serve_http_takes_a_bare_port_on_loopback(config: GatewayConfig) -> None:
    assert parse_listen("8787") == ("127.0.0.1", 8787) and parse_listen("[::1]:8787") == ("::1", 8787)
    port = free_port()
    argv = [sys.executable, "-m", "gateway", "--config", str(config.source), "serve", "--http", str(port)]
    log = config.state / "bare-port.log"
    with server_process(argv, f"http://127.0.0.1:{port}/healthz", "the gateway", log=log):
        pass
    assert f"gateway: serving http://127.0.0.1:{port}/mcp" in log.read_text()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_line_and_never_says_serving(config: GatewayConfig, workers: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error_line(gateway(config, "serve", "--http", f"127.0.0.1:{port}", "--workers", workers))
    assert line.startswith(f"gateway: cannot listen on 127.0.0.1:{port}: address already in use"), line


def test_token_revoke_refuses_a_jti_this_gateway_never_issued(config: GatewayConfig) -> None:
    line = one_error_line(gateway(config, "token", "revoke", "nope"))
    assert line.startswith("gateway: 'nope' is not the jti of a token this gateway issued, so nothing was revoked")
    external = one_error_line(gateway(config, "token", "revoke", "nope", "--external"))
    assert "names no identity.external_issuer" in external
    issued = json.loads(gateway(config, "token", "issue", "--role", "worker", "--agent", "w9", "--json").stdout)
    jti = issued["claims"]["jti"]
    revoked, again = gateway(config, "token", "revoke", jti), gateway(config, "token", "revoke", jti)
    assert (revoked.returncode, revoked.stderr) == (0, f"revoked {jti}\n")
    assert (again.returncode, again.stderr) == (0, f"{jti} was already revoked\n")
    assert Ledger.for_config(config).db.query("SELECT jti FROM revocations WHERE jti = 'nope'") == []


def test_a_bug_exits_70_with_its_traceback(
    config: GatewayConfig, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fault no input causes (a mock, for want of a real bug): not Python's 1, which means "the answer is no"."""

    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(commands, "cmd_keys", broken)
    assert main(["--config", str(config.source), "keys", "list"]) == EXIT_BUG == 70
    said = capsys.readouterr().err
    assert "Traceback" in said and "RuntimeError: a bug" in said and "please report the traceback" in said


def test_exit_codes_are_documented_per_command_and_each_means_one_thing() -> None:
    """docs/cli.md: one table of meanings, one row per command naming only codes from it."""
    text = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    meanings = dict(re.findall(r"^\| (\d+) \| (.+) \|$", text, re.M))
    assert sorted(map(int, meanings)) == [0, 1, 2, 3, 4, EXIT_BUG, 130, 141]
    assert (EXIT_FAILED, EXIT_ERROR, EXIT_ASK, EXIT_DENY) == (1, 2, 3, 4)
    rows = dict(re.findall(r"^\| `([a-z -]+?)(?:`, `[a-z]+)?` \| (.+) \|$", text, re.M))
    commands_documented = {name.split()[0] for name in rows}
    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(top.choices) <= commands_documented, set(top.choices) - commands_documented
    for name, codes in rows.items():
        assert {int(c) for c in re.findall(r"\b\d+\b", codes)} <= {0, 1, 2, 3, 4}, name
    assert "3 ask, 4 deny" in rows["check"] and "1" not in rows["check"]


def test_the_command_named_in_hints_runs_without_the_venv_on_path(tmp_path: Path) -> None:
    """`make demo` runs .venv/bin/gateway; its closing hint must name a command a shell finds."""
    probe = "from gateway.cli.output import gateway_command; print(gateway_command())"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    named = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env).stdout.strip()
    assert named == str(Path(sys.executable).parent / "gateway"), named
    done = subprocess.run(f"{named} --help", shell=True, capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.startswith("usage: gateway")
    on_path = {**env, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=on_path).stdout == (
        "gateway\n"
    )


# --- a closed pipe -------------------------------------------------------------------------------------


def test_a_closed_pipe_ends_quietly(config: GatewayConfig) -> None:
    big = json.dumps({"path": "src/big.txt", "content": "x" * 120_000})  # more than a pipe holds
    argv = [sys.executable, "-m", "gateway", "--config", str(config.source), "check", "--role", "developer"]
    argv += ["--tool", "fs_write", "--args", big, "--explain", "--json"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(1) == b"{"
        proc.stdout.close()  # as `| head -c 1` does
        stderr = proc.stderr.read().decode()
        assert proc.wait(60) == 141, stderr
    assert stderr == "", "no traceback, no message"


# --- one base for relative paths -----------------------------------------------------------------------


def test_relative_paths_in_gateway_yaml_are_relative_to_its_directory(config: GatewayConfig, tmp_path: Path) -> None:
    home = tmp_path / "ops"
    home.mkdir()
    raw = yaml.safe_load(config.source.read_text())
    state = Path(raw["state_dir"])
    relative = Path(os.path.relpath(state, home))
    raw.update(
        workspace=os.path.relpath(config.workspace, home),
        state_dir=str(relative),
        roles=str(relative / "roles"),
        worktrees_dir="../wt",
        policy={**raw["policy"], "path": str(relative / "policies")},
        sandbox={"hide": ["secrets"]},
        upstreams={"echo": {"command": "echo", "cwd": "tools", "sandbox": {"writable": ["out"], "visible": ["v"]}}},
    )
    (home / "gateway.yaml").write_text(yaml.safe_dump(raw))
    loaded = GatewayConfig.load(home / "gateway.yaml")
    assert (loaded.workspace, loaded.state, loaded.roles_dir) == (config.workspace, state, state / "roles")
    assert (loaded.policy_dir, loaded.worktrees) == (state / "policies", tmp_path / "wt")
    assert loaded.sandbox.hide == [str(home / "secrets")]
    upstream = loaded.upstreams["echo"]
    assert (upstream.cwd, upstream.sandbox.writable, upstream.sandbox.visible) == (
        str(home / "tools"),
        [str(home / "out")],
        [str(home / "v")],
    )
    # the same from anywhere: the command run in yet another directory reads the same files
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    raw.pop("upstreams")
    (home / "gateway.yaml").write_text(yaml.safe_dump(raw))
    done = gateway(
        home / "gateway.yaml",
        "check",
        "--role",
        "planner",
        "--tool",
        "fs_read",
        "--args",
        '{"path": "README.md"}',
        cwd=elsewhere,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["effects"]["reads"] == ["README.md"], done.stderr


# --- a cold start imports only what the command needs ---------------------------------------------------

HEAVY = ("mcp", "mcp_types", "starlette", "uvicorn", "httpx", "httpx2", "jsonschema", "jwt", "cryptography")
# what structlog and the telemetry would import for features a decision does not use (gateway.cli, telemetry)
HEAVY += ("rich", "greenlet", "opentelemetry")
# what a decision never needs: the commit machinery is made on first use (gateway.runtime.Gateway.committer)
UNUSED = ("gateway.commit.executor", "gateway.commit.merge", "gateway.commit.ceremony")

PROBE = """
import json, runpy, sys
sys.argv = ["gateway", *sys.argv[2:]]
try:
    runpy.run_module("gateway", run_name="__main__")
except SystemExit:
    pass
with open(OUT, "w") as out:
    json.dump(sorted(sys.modules), out)
"""


def imported_by(config: GatewayConfig, out: Path, *args: str, stdin: str = "") -> set[str]:
    """Every module the command imported, and the top-level package of each."""
    probe = PROBE.replace("OUT", repr(str(out)))
    argv = [sys.executable, "-c", probe, "-", "--config", str(config.source), *args]
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
    assert out.exists(), done.stderr
    modules = set(json.loads(out.read_text()))
    return modules | {name.split(".")[0] for name in modules}


def test_check_and_the_hook_import_no_mcp_sdk_rich_or_commit_machinery(config: GatewayConfig, tmp_path: Path) -> None:
    check = imported_by(config, tmp_path / "check.json", "check", "--role", "developer", "--tool", "fs_read")
    event = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    event["cwd"] = str(config.workspace)
    hook = imported_by(
        config, tmp_path / "hook.json", "hook", "claude-code", "--role", "developer", stdin=json.dumps(event)
    )
    assert "gateway" in check and "regorus" in check and "tree_sitter" in hook, "the probe ran the command"
    assert not check & {*HEAVY, *UNUSED}, check & {*HEAVY, *UNUSED}
    assert not hook & {*HEAVY, *UNUSED}, hook & {*HEAVY, *UNUSED}


def test_help_imports_no_pydantic(tmp_path: Path) -> None:
    out = tmp_path / "help.json"
    probe = PROBE.replace("OUT", repr(str(out)))
    subprocess.run([sys.executable, "-c", probe, "-", "--help"], capture_output=True, timeout=60)
    modules: Any = {name.split(".")[0] for name in json.loads(out.read_text())}
    assert "gateway" in modules and "pydantic" not in modules and "yaml" not in modules
