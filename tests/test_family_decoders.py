"""The decoders family (gateway/effects/shell/decoders.py: base64 -d, gunzip, xxd -r, openssl -d, ...): the facts its
programs' commands state and what it makes opaque. Cases are grouped by the program a command starts with (a
pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import (
    opaque_test,
    shell_workspace,
)

from gateway.effects.paths import Workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


OPAQUE_CASES = [
    ("echo aGk= | base64 -d | sh", "downloaded/decoded content executed"),
    ("echo aGk= | base64 --decode | bash", "downloaded/decoded content executed"),
    ("xxd -r -p hex.txt | sh", "downloaded/decoded content executed"),
]


test_opaque = opaque_test(OPAQUE_CASES)
