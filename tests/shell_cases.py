"""What the shell analyser's tests share (tests/test_family_*.py, tests/test_shell_walk.py): a fresh workspace
with a few files, so that writes and creates differ, and helpers to read the facts of a command.

    exists.txt  src/a.py  dir/  .venv/bin/  .env  link_out -> ../outside (a directory outside the workspace)

HOME is pinned to /home/tester so ``~`` expands the same everywhere. Each test module makes its ``ws``
fixture with ``shell_workspace``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command
from gateway.types import CommandEffect, Effects

HOME = "/home/tester"


def shell_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("HOME", HOME)
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "exists.txt").write_text("x\n")
    (root / "src" / "a.py").write_text("")
    (root / "dir").mkdir()
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".env").write_text("KEY=1\n")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link_out")
    return Workspace(root)


def with_more_files(ws: Workspace) -> Workspace:
    """The workspace with a key, a dotenv and a second source file, for globs and recursive reads to find."""
    (ws.root / "server.key").write_text("k")
    (ws.root / ".env").write_text("KEY=1")
    (ws.root / "src" / "b.py").write_text("")
    return ws


def run(command: str, ws: Workspace) -> Effects:
    return describe_command(command, ws, ws.root)


def argvs(fx: Effects) -> list[list[str]]:
    return [c.argv for c in fx.commands]


def vias(fx: Effects) -> list[tuple[str, str]]:
    return [(c.argv[0] if c.argv else "", c.via) for c in fx.commands]


def hosts(fx: Effects) -> set[tuple[str, str]]:
    return {(n.host, n.via) for n in fx.network}


def command(fx: Effects, program: str, nth: int = 0) -> CommandEffect:
    """The nth command that runs ``program``."""
    return [c for c in fx.commands if c.program == program][nth]


def fact(command_text: str, program: str, field: str, ws: Workspace) -> Any:
    return getattr(command(run(command_text, ws), program), field)


def outside(ws: Workspace, rel: str) -> str:
    """The display form of a path next to the workspace (absolute)."""
    return (ws.root.parent / rel).as_posix()


# The tests every family file makes from its case tables, one line each (``test_opaque = opaque_test(OPAQUE_CASES)``):
# a table is data, the test that reads it is written once here. Each takes the module's ``ws`` fixture.


def file_effects_test(cases: list[tuple[str, str, list[str]]]) -> Callable[..., None]:
    """Each (command, field, items): the items (``__parent__`` for the workspace's parent) are among ``field``."""

    @pytest.mark.parametrize(("command", "field", "items"), cases, ids=[f"{c}:{f}" for c, f, _ in cases])
    def test_file_effects(command: str, field: str, items: list[str], ws: Workspace) -> None:
        fx = run(command, ws)
        expected = [i.replace("__parent__", ws.root.parent.as_posix()) for i in items]
        found = getattr(fx, field)
        assert all(item in found for item in expected), (field, found, fx)

    return test_file_effects


def no_file_effects_test(cases: list[str]) -> Callable[..., None]:
    @pytest.mark.parametrize("command", cases)
    def test_no_file_effects(command: str, ws: Workspace) -> None:
        fx = run(command, ws)
        assert not (fx.reads or fx.writes or fx.creates or fx.deletes or fx.recursive_deletes), fx

    return test_no_file_effects


def network_test(cases: list[tuple[str, set[tuple[str, str]]]]) -> Callable[..., None]:
    """Each (command, {(host, via)}): the command reaches at least those hosts, through those programs."""

    @pytest.mark.parametrize(("command", "expected"), cases, ids=[c for c, _ in cases])
    def test_network(command: str, expected: set[tuple[str, str]], ws: Workspace) -> None:
        assert expected <= hosts(run(command, ws))

    return test_network


def no_network_test(cases: list[str]) -> Callable[..., None]:
    @pytest.mark.parametrize("command", cases)
    def test_no_network(command: str, ws: Workspace) -> None:
        assert run(command, ws).network == []

    return test_no_network


def packages_test(cases: list[tuple[str, str, list[str], str]]) -> Callable[..., None]:
    """Each (command, manager, names, scope) is one of the packages the command installs."""

    @pytest.mark.parametrize(("command", "manager", "names", "scope"), cases, ids=[c for c, _, _, _ in cases])
    def test_packages(command: str, manager: str, names: list[str], scope: str, ws: Workspace) -> None:
        packages = [(p.manager, p.names, p.scope) for p in run(command, ws).packages]
        assert (manager, names, scope) in packages

    return test_packages


def opaque_test(cases: list[tuple[str, str]]) -> Callable[..., None]:
    """Each (command, reason): the command is opaque, for a reason containing ``reason``."""

    @pytest.mark.parametrize(("command", "reason"), cases, ids=[f"{c!r}" for c, _ in cases])
    def test_opaque(command: str, reason: str, ws: Workspace) -> None:
        opaque = run(command, ws).opaque
        assert any(reason in r for r in opaque), opaque

    return test_opaque


def not_opaque_test(cases: list[str]) -> Callable[..., None]:
    @pytest.mark.parametrize("command", cases)
    def test_not_opaque(command: str, ws: Workspace) -> None:
        fx = run(command, ws)
        assert fx.opaque == [], fx.opaque

    return test_not_opaque


def subcommand_test(cases: list[tuple[str, str, str | None, str | None]]) -> Callable[..., None]:
    """Each (command, program, subcommand, operation): found after the program's global options."""

    @pytest.mark.parametrize(("command_text", "program", "subcommand", "operation"), cases, ids=[c[0] for c in cases])
    def test_subcommand_after_global_options(
        command_text: str, program: str, subcommand: str | None, operation: str | None, ws: Workspace
    ) -> None:
        found = command(run(command_text, ws), program)
        assert (found.subcommand, found.operation) == (subcommand, operation)

    return test_subcommand_after_global_options


def executes_test(cases: list[tuple[str, str, list[str]]]) -> Callable[..., None]:
    """Each (command, program, executes): what the program may run; a command that may run something is opaque."""

    @pytest.mark.parametrize(("command_text", "program", "executes"), cases, ids=[c[0] for c in cases])
    def test_executes(command_text: str, program: str, executes: list[str], ws: Workspace) -> None:
        fx = run(command_text, ws)
        assert command(fx, program).executes == executes
        assert bool(fx.opaque) == bool(executes), "what a command may run is also opaque"

    return test_executes
