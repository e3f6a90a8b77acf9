"""The privilege family (gateway/effects/shell/privilege.py: sudo, sudoedit, su, doas, pkexec, run0): the facts its
programs' commands state and what it makes opaque. Cases are grouped by the program a command starts with (a
pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import (
    check_file_effects,
    check_network,
    check_not_opaque,
    check_opaque,
    check_packages,
    run,
    shell_workspace,
)

from gateway.effects.paths import Workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


FILE_CASES = [
    ("echo x | sudo tee /etc/x.conf", "creates", ["/etc/x.conf"]),
]


@pytest.mark.parametrize(("command", "field", "items"), FILE_CASES, ids=[f"{c}:{f}" for c, f, _ in FILE_CASES])
def test_file_effects(command: str, field: str, items: list[str], ws: Workspace) -> None:
    check_file_effects(command, field, items, ws)


NETWORK_CASES = [
    ("sudo curl https://x.io", {("x.io", "curl")}),
]


@pytest.mark.parametrize(("command", "expected"), NETWORK_CASES, ids=[c for c, _ in NETWORK_CASES])
def test_network(command: str, expected: set[tuple[str, str]], ws: Workspace) -> None:
    check_network(command, expected, ws)


PACKAGE_CASES = [
    ("sudo ./.venv/bin/pip install x", "pip", ["x"], "global"),
    ("sudo pip install x", "pip", ["x"], "global"),
    ("sudo npm install x", "npm", ["x"], "global"),
]


@pytest.mark.parametrize(
    ("command", "manager", "names", "scope"), PACKAGE_CASES, ids=[c for c, _, _, _ in PACKAGE_CASES]
)
def test_packages(command: str, manager: str, names: list[str], scope: str, ws: Workspace) -> None:
    check_packages(command, manager, names, scope, ws)


PRIVILEGED_CASES = [
    ("sudo ls", True),
    ("sudo -u bob -- ls", True),
    ("su -c 'id' root", True),
    ("su -", True),
    ("doas ls", True),
    ("pkexec ls", True),
    ("run0 ls", True),
    ("sudoedit /etc/hosts", True),
    ("bash -c 'sudo ls'", True),
    ("echo $(sudo id)", True),
    ("find . -exec sudo rm {} +", True),
    ("ls | xargs sudo rm", True),
    ("env sudo ls", True),
    ("ls", False),
    ("echo sudo", False),
    ("grep sudo /etc/group", False),
]


@pytest.mark.parametrize(("command", "privileged"), PRIVILEGED_CASES, ids=[c for c, _ in PRIVILEGED_CASES])
def test_privileged(command: str, privileged: bool, ws: Workspace) -> None:
    assert run(command, ws).privileged is privileged


def test_sudoedit_writes(ws: Workspace) -> None:
    assert run("sudo -e /etc/hosts", ws).writes == ["/etc/hosts"]


OPAQUE_CASES = [
    ('su -c "$C"', "non-literal command text"),
    ("sudo PATH=/tmp ls", "PATH= changes"),
]


@pytest.mark.parametrize(("command", "reason"), OPAQUE_CASES, ids=[f"{c!r}" for c, _ in OPAQUE_CASES])
def test_opaque(command: str, reason: str, ws: Workspace) -> None:
    check_opaque(command, reason, ws)


NOT_OPAQUE_CASES = [
    "sudo apt-get update",
]


@pytest.mark.parametrize("command", NOT_OPAQUE_CASES)
def test_not_opaque(command: str, ws: Workspace) -> None:
    check_not_opaque(command, ws)
