"""The privilege family (gateway/effects/shell/privilege.py: sudo, sudoedit, su, doas, pkexec, run0): the facts its
programs' commands state and what it makes opaque. Cases are grouped by the program a command starts with (a
pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import (
    file_effects_test,
    network_test,
    not_opaque_test,
    opaque_test,
    packages_test,
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


test_file_effects = file_effects_test(FILE_CASES)


NETWORK_CASES = [
    ("sudo curl https://x.io", {("x.io", "curl")}),
]


test_network = network_test(NETWORK_CASES)


PACKAGE_CASES = [
    ("sudo ./.venv/bin/pip install x", "pip", ["x"], "global"),
    ("sudo pip install x", "pip", ["x"], "global"),
    ("sudo npm install x", "npm", ["x"], "global"),
]


test_packages = packages_test(PACKAGE_CASES)


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


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "sudo apt-get update",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)
