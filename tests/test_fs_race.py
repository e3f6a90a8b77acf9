"""Symlink swaps between a path's check and its use (TOCTOU) never reach past the workspace.

The deterministic tests drive the two steps apart: ``Workspace.resolve`` checks the path, the test swaps a
component for a symlink to a secret outside, then ``Beneath`` (or the tool) acts on the checked path. The
race tests run the red team's real swap loops in a thread against the whole pipeline, a bounded number of times.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import add_role, inproc_client, ledger_rows, text_of, token

from gateway.config import SandboxConfig
from gateway.effects.beneath import Beneath
from gateway.effects.paths import Workspace
from gateway.errors import PathChanged, PathOutsideWorkspace, ToolFailed
from gateway.repo import GitError, Repo
from gateway.sandbox import PathRefused, Sandbox
from gateway.tasks.worktrees import commit_all, make_worktree

SECRET = b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIK3y\n-----END PRIVATE KEY-----\n"


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    """Stands for the gateway's key and roles dirs: outside the workspace."""
    outside = tmp_path / "state"
    outside.mkdir()
    (outside / "key.pem").write_bytes(SECRET)
    (outside / "worker.yaml").write_text("max_tier: 2\n")
    return outside


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src" / "d").mkdir(parents=True)
    (root / "src" / "x").write_text("harmless\n")
    (root / "src" / "d" / "worker.yaml").write_text("max_tier: 1\n")
    return Workspace(root)


def swap_for_symlink(path: Path, target: Path) -> None:
    """Replace ``path`` (a file or a directory) by a symlink to ``target``, as an agent's script would."""
    path.rename(path.with_name(path.name + ".moved"))
    os.symlink(target, path)


def untouched(outside: Path) -> bool:
    return sorted(p.name for p in outside.iterdir()) == ["key.pem", "worker.yaml"] and (
        (outside / "key.pem").read_bytes() == SECRET and (outside / "worker.yaml").read_text() == "max_tier: 2\n"
    )


def test_a_read_refuses_a_file_swapped_for_a_symlink(ws: Workspace, secrets_dir: Path) -> None:
    checked = ws.resolve("src/x")
    swap_for_symlink(ws.root / "src" / "x", secrets_dir / "key.pem")
    with pytest.raises(PathChanged, match="'src/x' became a symbolic link after the path was checked"):
        Beneath(ws.root).read(checked)


def test_a_read_refuses_a_parent_swapped_for_a_symlink(ws: Workspace, secrets_dir: Path) -> None:
    (secrets_dir / "x").write_bytes(SECRET)
    checked = ws.resolve("src/d/x")
    swap_for_symlink(ws.root / "src" / "d", secrets_dir)
    with pytest.raises(PathChanged, match="'src/d' became a symbolic link"):
        Beneath(ws.root).read(checked)


def test_a_write_through_a_swapped_parent_lands_nowhere(ws: Workspace, secrets_dir: Path) -> None:
    """Red team C: the parent directory exchanged with a symlink to the state dir's roles."""
    checked = ws.resolve("src/d/worker.yaml")
    swap_for_symlink(ws.root / "src" / "d", secrets_dir)
    with pytest.raises(PathChanged):
        Beneath(ws.root).write(checked, b"max_tier: 3\n")
    assert untouched(secrets_dir)


def test_a_write_over_a_swapped_file_replaces_the_link_not_its_target(ws: Workspace, secrets_dir: Path) -> None:
    checked = ws.resolve("src/d/worker.yaml")
    swap_for_symlink(ws.root / "src" / "d" / "worker.yaml", secrets_dir / "worker.yaml")
    with pytest.raises(PathChanged):
        Beneath(ws.root).write(checked, b"max_tier: 3\n")
    assert untouched(secrets_dir)
    assert [p.name for p in (ws.root / "src" / "d").iterdir() if p.name.endswith(".tmp")] == []


def test_a_write_that_makes_parents_refuses_one_swapped_in(ws: Workspace, secrets_dir: Path) -> None:
    checked = ws.resolve("src/new/deeper/worker.yaml")
    os.symlink(secrets_dir, ws.root / "src" / "new")  # appears after the check
    with pytest.raises(PathChanged, match="'src/new'"):
        Beneath(ws.root).write(checked, b"max_tier: 3\n")
    assert untouched(secrets_dir)


def test_a_write_creates_parents_and_keeps_the_mode(ws: Workspace) -> None:
    tree = Beneath(ws.root)
    assert tree.write(ws.resolve("src/a/b/c.txt"), b"new\n") is False
    assert (ws.root / "src" / "a" / "b" / "c.txt").read_bytes() == b"new\n"
    script = ws.root / "src" / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert tree.write(ws.resolve("src/run.sh"), b"#!/bin/sh\ntrue\n") is True
    assert script.stat().st_mode & 0o777 == 0o755 and script.read_text() == "#!/bin/sh\ntrue\n"


def test_a_delete_never_removes_what_a_swapped_path_points_at(ws: Workspace, secrets_dir: Path) -> None:
    tree = Beneath(ws.root)
    checked = ws.resolve("src/x")
    swap_for_symlink(ws.root / "src" / "x", secrets_dir / "key.pem")
    with pytest.raises(PathChanged):
        tree.delete(checked, recursive=False)
    checked = ws.resolve("src/d")
    swap_for_symlink(ws.root / "src" / "d", secrets_dir)
    with pytest.raises(PathChanged):
        tree.delete(checked, recursive=True)
    assert untouched(secrets_dir)


def test_a_recursive_delete_removes_links_inside_not_their_targets(ws: Workspace, secrets_dir: Path) -> None:
    os.symlink(secrets_dir, ws.root / "src" / "d" / "state")
    Beneath(ws.root).delete(ws.resolve("src/d"), recursive=True)
    assert not (ws.root / "src" / "d").exists() and untouched(secrets_dir)


def test_a_listing_refuses_a_swapped_directory_and_never_enters_links(ws: Workspace, secrets_dir: Path) -> None:
    tree = Beneath(ws.root)
    os.symlink(secrets_dir, ws.root / "src" / "state")
    every: Callable[[Any], bool] = lambda entry: True  # noqa: E731
    names = [e.path.relative_to(ws.root).as_posix() for e in tree.scan(ws.root, True, every)]
    assert names == ["src", "src/d", "src/state", "src/x", "src/d/worker.yaml"]
    checked = ws.resolve("src/d")
    swap_for_symlink(ws.root / "src" / "d", secrets_dir)
    with pytest.raises(PathChanged):
        list(tree.scan(checked, True, every))


def test_a_directory_swapped_during_a_recursive_listing_is_refused(ws: Workspace, secrets_dir: Path) -> None:
    def swap_when_listed(entry: Any) -> bool:
        if entry.path.name == "d" and entry.is_dir:  # listed as a directory, entered after this returns
            swap_for_symlink(entry.path, secrets_dir)
        return True

    with pytest.raises(PathChanged, match="'src/d'"):
        list(Beneath(ws.root).scan(ws.root, True, swap_when_listed))


def test_a_fifo_put_in_a_files_place_is_refused_without_hanging(ws: Workspace) -> None:
    checked = ws.resolve("src/x")
    (ws.root / "src" / "x").unlink()
    os.mkfifo(ws.root / "src" / "x")
    with pytest.raises(ToolFailed, match="not a regular file"):
        Beneath(ws.root).read(checked)


def test_a_path_outside_the_root_is_refused(ws: Workspace, secrets_dir: Path) -> None:
    with pytest.raises(PathOutsideWorkspace, match="outside"):
        Beneath(ws.root).read(secrets_dir / "key.pem")


# --- through the whole pipeline: the gateway's real key, a real SDK client, the ledger


@pytest.fixture
def maintainer(config: Any) -> str:
    add_role(config, "maintainer", ["fs_*"], max_tier=2)
    return token(config, "maintainer", agent="m1")


@pytest.fixture
def signing_key(gateway: Any) -> bytes:
    keys = gateway.config.keys_dir
    return (keys / f"{(keys / 'active').read_text().strip()}.pem").read_bytes()


def key_lines(key: bytes) -> list[str]:
    return [line for line in key.decode().splitlines() if line and not line.startswith("-----")]


@pytest.mark.anyio
async def test_a_swap_after_the_check_is_refused_and_recorded(
    maintainer: str, gateway: Any, repo: Path, signing_key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap happens after every check the pipeline and the tool made, just before the tool opens the path."""
    (repo / "src" / "x").write_text("harmless\n")
    key = gateway.config.keys_dir / f"{(gateway.config.keys_dir / 'active').read_text().strip()}.pem"
    read = Beneath.read

    def swap_then_read(self: Beneath, real: Path, limit: int | None = None) -> bytes:
        swap_for_symlink(repo / "src" / "x", key)
        return read(self, real, limit)

    async with inproc_client(gateway, maintainer) as client:
        monkeypatch.setattr(Beneath, "read", swap_then_read)
        result = await client.call_tool("fs_read", {"path": "src/x"})
    assert result.is_error and result.structured_content["error"]["code"] == "path_changed"
    assert not any(line in text_of(result) for line in key_lines(signing_key))
    last = ledger_rows(gateway)[-1]
    assert last.tool == "fs_read" and last.outcome == "error"


@pytest.fixture
def swapping() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Runs a swap loop in a thread until the test ends (it stops when told, never after a sleep)."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    failures: list[BaseException] = []

    def start(swap_once: Callable[[], None]) -> None:
        def loop() -> None:
            try:
                while not stop.is_set():
                    swap_once()
            except BaseException as exc:  # reported by the fixture
                failures.append(exc)

        threads.append(threading.Thread(target=loop, daemon=True))
        threads[-1].start()

    yield start
    stop.set()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.anyio
async def test_the_red_teams_read_race_never_returns_a_key_byte(
    maintainer: str, gateway: Any, repo: Path, signing_key: bytes, swapping: Any
) -> None:
    """Red team B: src/x flips between a regular file and a symlink to the signing key while fs_read runs."""
    src = repo / "src"
    (src / "reg").write_text("harmless\n")
    os.symlink(gateway.config.keys_dir / f"{(gateway.config.keys_dir / 'active').read_text().strip()}.pem", src / "lnk")
    os.link(src / "reg", src / "x")

    def swap_once() -> None:
        os.link(src / "lnk", src / "tmp", follow_symlinks=False)
        os.replace(src / "tmp", src / "x")
        os.link(src / "reg", src / "tmp")
        os.replace(src / "tmp", src / "x")

    answers: list[tuple[bool, str]] = []
    async with inproc_client(gateway, maintainer) as client:
        swapping(swap_once)
        for _ in range(200):
            result = await client.call_tool("fs_read", {"path": "src/x"})
            answers.append((result.is_error, text_of(result)))
    secret = key_lines(signing_key)
    assert not [text for _, text in answers if "PRIVATE KEY" in text or any(line in text for line in secret)]
    assert not [text for _, text in answers if "internal gateway error" in text]  # each refusal says why
    # what ran answered the harmless file; the rest was refused or left waiting for a person ("NOT RUN: ...")
    assert {text for failed, text in answers if not failed and not text.startswith("NOT RUN:")} <= {"harmless\n"}


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_red_teams_write_race_never_lands_in_the_state_dir(
    maintainer: str, gateway: Any, repo: Path, swapping: Any
) -> None:
    """Red team C: src/d exchanged (renameat2 RENAME_EXCHANGE) with a symlink to the roles dir while fs_write runs."""
    roles = gateway.config.roles_dir
    before = {p.name: p.read_bytes() for p in roles.iterdir()}
    src = repo / "src"
    (src / "d").mkdir()
    os.symlink(roles, src / "dl")
    libc = ctypes.CDLL(None, use_errno=True)
    rename_exchange = 2

    def swap_once() -> None:
        if libc.renameat2(-100, bytes(src / "d"), -100, bytes(src / "dl"), rename_exchange) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")

    answers: list[str] = []
    async with inproc_client(gateway, maintainer) as client:
        swapping(swap_once)
        for n in range(200):
            arguments = {"path": "src/d/maintainer.yaml", "content": f"max_tier: 3 # {n}\n"}
            answers.append(text_of(await client.call_tool("fs_write", arguments)))
    assert {p.name: p.read_bytes() for p in roles.iterdir()} == before
    assert not [text for text in answers if "internal gateway error" in text]


# --- the gateway's own git over a tree an agent writes: behind the sandbox's wall


def all_objects(repository: Path) -> bytes:
    """Every object's bytes in a repository (loose and packed, reachable or not)."""
    done = subprocess.run(
        ["git", "-C", str(repository), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    )
    return done.stdout


def holds_the_key(data: bytes, key: bytes) -> bool:
    return b"PRIVATE KEY" in data or any(line.encode() in data for line in key_lines(key))


@pytest.fixture
def key_link(gateway: Any, repo: Path) -> str:
    """src/keys in the workspace, a symlink to the gateway's real keys dir (as if swapped in for a directory);
    answers the workspace path of the signing key through it."""
    keys = gateway.config.keys_dir
    os.symlink(keys, repo / "src" / "keys")
    return f"src/keys/{(keys / 'active').read_text().strip()}.pem"


def test_inside_the_git_wall_a_link_to_the_state_dir_leads_nowhere(
    gateway: Any, repo: Path, key_link: str, signing_key: bytes
) -> None:
    """What makes the class harmless: git that follows the link inside finds nothing, while outside it
    would read the key (hash-object opens by path, through a leading symlink, like git add in a race)."""
    key_blob = Repo(repo).run("hash-object", "--", key_link).strip()  # outside the wall: the key, no write
    walled = Repo(repo, wall=gateway.sandbox.git_wall(repo, writes=[repo / ".git" / "objects"]))
    with pytest.raises(GitError, match="No such file"):
        walled.run("hash-object", "-w", "--", key_link)
    assert walled.run("hash-object", "-w", "--", "src/app.py").strip()  # the tree and the objects are there
    assert Repo(repo).run("cat-file", "-t", key_blob, check=False).strip() == ""
    assert not holds_the_key(all_objects(repo), signing_key)


def test_a_checkpoint_with_a_link_to_the_keys_holds_no_key_byte(
    gateway: Any, repo: Path, key_link: str, signing_key: bytes
) -> None:
    (repo / "src" / "app.py").write_text("def answer():\n    return 42\n")
    checkpoint = gateway.checkpoints.take(repo, "call-1", paths=[])
    commit = gateway.checkpoints.get(checkpoint["id"])["detail"]["commit"]
    listing = Repo(repo).run("ls-tree", "-r", commit)
    assert "120000 blob" in listing.split("src/keys")[0].splitlines()[-1]  # the link itself, as a link
    assert not holds_the_key(all_objects(repo), signing_key)
    assert not holds_the_key(all_objects(gateway.checkpoints.vault.path), signing_key)


def test_the_reports_commit_of_a_worktree_with_a_link_to_the_keys_holds_no_key_byte(
    gateway: Any, repo: Path, signing_key: bytes
) -> None:
    """The task's worktree lies in the worktrees dir the sandbox hides: the wall binds it back, read-only."""
    worktree = gateway.config.worktrees / "T9"
    make_worktree(Repo(repo), worktree, "main", gateway.config.state / "locks", branch="task/T9", reset_branch=True)
    (worktree / "src" / "new.py").write_text("x = 1\n")
    os.symlink(gateway.config.keys_dir, worktree / "src" / "keys")
    commit = commit_all(worktree, "T9: done\n", gateway.sandbox)
    assert Repo(repo).run("show", f"{commit}:src/new.py") == "x = 1\n"
    assert Repo(repo).run("ls-tree", commit, "src/keys").startswith("120000 blob")
    assert not holds_the_key(all_objects(repo), signing_key)


def test_a_repository_whose_objects_dir_is_a_link_is_refused_not_bound(gateway: Any, repo: Path) -> None:
    """A developer may rearrange its own .git: objects moved away and a relative link to the state dir's parent
    left in its place. Bound into the wall as it resolves, that would show the state dir (writable) to the
    walled git add; the gateway refuses the checkpoint instead, and nothing is written there."""
    git = repo / ".git"
    Repo(repo).run("checkout", "-q", "--orphan", "empty")  # as the red team did: no HEAD whose objects it needs
    (git / "objects").rename(git / "objects.real")
    parent = gateway.config.state_dir.parent
    os.symlink(os.path.relpath(parent, git), git / "objects")
    before = sorted(p.name for p in parent.iterdir())
    with pytest.raises(PathRefused, match="symlink"):
        gateway.checkpoints.take(repo, "call-1", paths=[])
    with pytest.raises(PathRefused, match="hidden"):
        gateway.sandbox.git_wall(repo, writes=[gateway.config.state_dir / "x"])
    assert sorted(p.name for p in parent.iterdir()) == before


def test_the_git_wall_is_no_wall_when_the_sandbox_is_off(repo: Path) -> None:
    """``sandbox.mode: off`` (already marked unconfined): the gateway's git runs as it did."""
    wall = Sandbox(SandboxConfig(mode="off")).git_wall(repo, writes=[repo / ".git" / "objects"])
    assert wall(["git", "status"]) == ["git", "status"]


@pytest.fixture
def git_reader(config: Any) -> str:
    add_role(config, "reader", ["git_*"], max_tier=1)
    return token(config, "reader", agent="r1")


@pytest.mark.anyio
async def test_git_diff_and_status_with_a_link_to_the_keys_return_no_key_byte(
    git_reader: str, gateway: Any, repo: Path, key_link: str, signing_key: bytes
) -> None:
    (repo / "src" / "app.py").write_text("def answer():\n    return 42\n")
    async with inproc_client(gateway, git_reader) as client:
        status = text_of(await client.call_tool("git_status", {}))
        diff = text_of(await client.call_tool("git_diff", {"ref": "HEAD"}))
    assert "?? src/keys" in status and "return 42" in diff
    assert not holds_the_key((status + diff).encode(), signing_key)


def test_the_red_teams_checkpoint_race_never_puts_a_key_byte_in_the_object_store(
    gateway: Any, repo: Path, signing_key: bytes, swapping: Any
) -> None:
    """src/d exchanged (renameat2) with a symlink to the real keys dir, over and over, while checkpoints are
    taken: git add lists src/d as a directory, then opens its files through the link. Unconfined, this puts
    the signing key into a blob within a few dozen checkpoints; behind the wall the link leads nowhere."""
    src = repo / "src"
    (src / "d").mkdir()
    for n in range(5):
        (src / "d" / f"f{n}").write_text("harmless\n")
    os.symlink(gateway.config.keys_dir, src / "dl")
    libc = ctypes.CDLL(None, use_errno=True)

    def swap_once() -> None:
        if libc.renameat2(-100, bytes(src / "d"), -100, bytes(src / "dl"), 2) != 0:  # RENAME_EXCHANGE
            raise OSError(ctypes.get_errno(), "renameat2")

    swapping(swap_once)
    outcomes = []
    for n in range(50):
        try:
            outcomes.append(gateway.checkpoints.take(repo, f"call-{n}", paths=[])["id"])
        except GitError as exc:  # git tripped over the swap: no checkpoint, so the call would not run
            outcomes.append(str(exc))
    assert not holds_the_key(all_objects(repo), signing_key)
    assert not holds_the_key(all_objects(gateway.checkpoints.vault.path), signing_key)
    assert any(o.startswith("cp-") for o in outcomes)
