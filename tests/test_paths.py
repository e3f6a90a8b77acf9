"""Workspace confinement: resolved, symlinks followed, traversal and protected paths refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.effects.paths import Workspace, suspicious_unicode
from gateway.errors import InvalidArguments, PathOutsideWorkspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x")
    (root / ".gateway").mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    return Workspace(root, protected=[root / ".gateway"])


def test_relative_path_resolves_inside(ws: Workspace) -> None:
    assert ws.resolve("src/a.py") == ws.root / "src" / "a.py"
    assert ws.display(ws.resolve("src/../src/a.py")) == "src/a.py"
    assert ws.display(ws.resolve(".")) == "."


@pytest.mark.parametrize("raw", ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "/", "..", "src/../.."])
def test_escapes_are_refused(ws: Workspace, raw: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        ws.resolve(raw)


def test_absolute_path_inside_is_allowed(ws: Workspace) -> None:
    assert ws.resolve(str(ws.root / "src" / "a.py")) == ws.root / "src" / "a.py"


def test_symlink_escape_is_refused(ws: Workspace, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside.txt", ws.root / "link.txt")
    os.symlink(tmp_path, ws.root / "dirlink")
    with pytest.raises(PathOutsideWorkspace):
        ws.resolve("link.txt")
    with pytest.raises(PathOutsideWorkspace):
        ws.resolve("dirlink/outside.txt")
    assert ws.display(ws.locate("link.txt")) == str(tmp_path / "outside.txt")


def test_symlink_inside_is_followed(ws: Workspace) -> None:
    os.symlink(ws.root / "src" / "a.py", ws.root / "alias.py")
    assert ws.resolve("alias.py") == ws.root / "src" / "a.py"


def test_protected_state_dir_is_refused(ws: Workspace) -> None:
    with pytest.raises(PathOutsideWorkspace, match="gateway's own state"):
        ws.resolve(".gateway/keys/x.pem")
    os.symlink(ws.root / ".gateway", ws.root / "innocent")
    with pytest.raises(PathOutsideWorkspace):
        ws.resolve("innocent/gateway.db")


def test_worktree_inside_state_dir_is_its_own_workspace(tmp_path: Path) -> None:
    state = tmp_path / "ws" / ".gateway"
    tree = state / "worktrees" / "T1"
    tree.mkdir(parents=True)
    ws = Workspace(tree, protected=[state])
    assert ws.resolve("file.txt") == tree / "file.txt"


@pytest.mark.parametrize("raw", ["a\x00b", ""])
def test_malformed_paths_are_invalid(ws: Workspace, raw: str) -> None:
    with pytest.raises(InvalidArguments):
        ws.resolve(raw)


@pytest.mark.parametrize(
    "raw",
    [".\u0435nv", "src/\u200bsecret", "\uff0eenv", "a\u202egnp.exe", "re\u0430dme.md", "\u0391dmin"],
)
def test_unicode_look_alikes_are_flagged(raw: str) -> None:
    assert suspicious_unicode(raw)


@pytest.mark.parametrize("raw", ["src/a.py", "docs/résumé.md", "日本語/ファイル.txt", "αβγ/δέλτα"])
def test_ordinary_names_are_not_flagged(raw: str) -> None:
    assert suspicious_unicode(raw) is None
