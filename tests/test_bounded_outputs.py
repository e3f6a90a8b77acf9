"""What the gateway reads of an agent's tree is bounded and decoded leniently: git's output for the git tools,
the file fs_edit holds, the Python file a frozen symbol is looked up in. Real git, real files, a real client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import add_role, inproc_client, ledger_rows, reconfigure, text_of, token

from gateway.repo import Repo
from gateway.runtime import Gateway
from gateway.tasks.drift import MAX_PARSED_BYTES, frozen_problems
from gateway.tools.files import MAX_EDIT_BYTES

pytestmark = pytest.mark.anyio


@pytest.fixture
def maintainer(config: Any) -> tuple[Gateway, str]:
    config = reconfigure(config, limits={"shell_output_bytes": 10_000})
    add_role(config, "maintainer", ["fs_*", "git_*"], max_tier=2)
    return Gateway(config), token(config, "maintainer", agent="m1")


async def test_git_output_is_capped_and_any_bytes_are_read(maintainer: tuple[Gateway, str], repo: Path) -> None:
    gateway, bearer = maintainer
    (repo / "README.md").write_bytes(b"caf\xe9 in latin-1\n" + b"line of a large diff\n" * 50_000)
    async with inproc_client(gateway, bearer) as client:
        diff = await client.call_tool("git_diff", {})
        status = await client.call_tool("git_status", {})
    text = text_of(diff)
    assert not diff.is_error and "+caf\ufffd in latin-1" in text  # not UTF-8: replaced, not a failure
    assert len(text.encode()) < 11_000 and "[truncated: " in text  # about 1 MB of diff, 10 kB kept
    assert not status.is_error and "M README.md" in text_of(status)
    assert [r.outcome for r in ledger_rows(gateway)] == ["ok", "ok"]


async def test_fs_edit_refuses_a_file_larger_than_it_holds(maintainer: tuple[Gateway, str], repo: Path) -> None:
    gateway, bearer = maintainer
    (repo / "huge.txt").write_bytes(b"x" * MAX_EDIT_BYTES + b"\nneedle\n")
    async with inproc_client(gateway, bearer) as client:
        result = await client.call_tool("fs_edit", {"path": "huge.txt", "old_string": "needle", "new_string": "pin"})
    assert result.is_error and f"larger than {MAX_EDIT_BYTES} bytes" in text_of(result)
    assert (repo / "huge.txt").read_bytes().endswith(b"needle\n")


def test_a_frozen_symbol_in_a_huge_file_is_a_problem_not_a_parse(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.root.mkdir()
    repo.run("init", "-q", "-b", "main")
    (repo.root / "big.py").write_text("def f():\n    pass\n" + "# padding\n" * (MAX_PARSED_BYTES // 10))
    (repo.root / "deep.py").write_text("def f():\n    return " + "-" * 100_000 + "1\n")
    repo.run("add", "-A")
    repo.run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "big")
    big, deep = frozen_problems(repo, "main", ["big.py:f", "deep.py:f"])
    assert f"bytes; the gateway parses Python files up to {MAX_PARSED_BYTES}" in big
    assert deep.startswith("frozen 'deep.py:f': deep.py does not parse")
