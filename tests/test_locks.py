"""Locks that go only with their owner, and the repository's worktree records changed one process at a time,
with real processes and real git: a git lock file a live process holds open stays (in recovery and in a
report), one whose process is gone is removed and recorded; racing processes that add and remove worktrees
never break each other's; what a crash left (verification checkouts, half-made worktrees) is cleared on start
unless its owner lives."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import inproc_client, ledger_rows, text_of, token

from gateway.locks import HOST, LockBusy, abandoned, alive, file_lock, this_process
from gateway.repo import Repo
from gateway.runtime import Gateway
from gateway.tasks.verification import SCRATCH_PREFIX
from gateway.tasks.worktrees import admin_dirs, discard_worktree, git_dir, make_worktree

pytestmark = pytest.mark.anyio

HOLD_OPEN = "import sys; f = open(sys.argv[1], 'w'); print('open', flush=True); sys.stdin.read()"


def hold_open(path: Path) -> subprocess.Popen[str]:
    """A live process with ``path`` open (as git holds its lock file) until its stdin is closed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "open\n"
    return holder


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(10)


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_process_is_alive_only_with_its_own_start_time() -> None:
    assert alive(this_process())
    pid = os.getpid()
    assert not alive(f"{HOST}|{pid}|t1"), "a pid now running another process (started later) is not the holder"
    assert not alive(f"{HOST}|{dead_pid()}|t1")
    assert alive(f"{HOST}|{pid}"), "a record without a start time is judged by its pid"
    assert alive("another-host|1|t1"), "another host's process cannot be judged from here"


def test_a_busy_lock_names_its_holder(tmp_path: Path) -> None:
    lock = tmp_path / "locks" / "worktree-T1.lock"
    taken, done = threading.Event(), threading.Event()

    def holder() -> None:
        with file_lock(lock, "making T1's worktree"):
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert taken.wait(30)
        with pytest.raises(LockBusy) as busy, file_lock(lock, "repairing T1", wait_s=0):
            pass
        assert this_process() in busy.value.message and "making T1's worktree" in busy.value.message
    finally:
        done.set()
        thread.join()
    with file_lock(lock, "repairing T1", wait_s=0):  # its holder let it go
        pass


def test_a_git_lock_file_is_abandoned_only_when_no_process_has_it_open(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    holder = hold_open(lock)
    try:
        assert not abandoned(lock), "a live git keeps its lock file open"
    finally:
        release(holder)
    assert abandoned(lock)
    assert not abandoned(tmp_path / "absent.lock")


async def test_a_git_lock_in_a_worktree_goes_only_once_its_process_is_gone(config: Any, repo: Path) -> None:
    """index.lock in a claimed task's worktree: held open by a live process, recovery leaves it and the report
    fails on it (nothing is committed); once that process is gone, the report removes it, records that, and
    commits the worker's change."""
    gateway = Gateway(config)
    planner, worker = token(config, "planner", agent="planner"), token(config, "worker", agent="w1")
    manifest = {"task_id": "T1", "objective": "answer 42", "allowed_paths": ["src/**"], "verification": ["true"]}
    async with inproc_client(gateway, planner) as client:
        assert not (await client.call_tool("task_submit", {"manifest": manifest})).is_error
    async with inproc_client(gateway, worker) as client:
        claim = await client.call_tool("task_claim", {"task_id": "T1"})
        assert not claim.is_error, text_of(claim)
        worktree = Path(claim.structured_content["worktree"])
        await client.call_tool("fs_write", {"path": "src/app.py", "content": "def answer():\n    return 42\n"})
        private = git_dir(worktree)
        assert private is not None
        holder = hold_open(private / "index.lock")
        try:
            assert gateway.board.recover_worktrees() == []
            assert (private / "index.lock").exists(), "a live process's lock is not a crash's"
            record = {"task_id": "T1", "status": "done", "files_changed": ["src/app.py"]}
            refused = await client.call_tool("task_report", {"record": record})
            assert refused.is_error and "index.lock" in text_of(refused)
        finally:
            release(holder)
        reported = await client.call_tool("task_report", {"record": record})
        assert not reported.is_error, text_of(reported)
    assert reported.structured_content["state"] == "reported"
    assert Repo(repo).run("show", "task/T1:src/app.py") == "def answer():\n    return 42\n"
    steps = [r.detail for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "locks_removed"]
    assert [s["removed"] for s in steps] == [[f"worktrees/{private.name}/index.lock"]]


RACER = """
import sys
from pathlib import Path
from gateway.repo import Repo
from gateway.tasks.worktrees import discard_worktree, make_worktree
repo, parent, locks = Repo(Path(sys.argv[1])), Path(sys.argv[2]), Path(sys.argv[3])
for n in range(int(sys.argv[5])):
    path = parent / f"{sys.argv[4]}-{n}"
    make_worktree(repo, path, "HEAD", locks)
    discard_worktree(repo, path, locks)
"""


def test_racing_processes_add_and_remove_worktrees_without_breaking_each_other(repo: Path, tmp_path: Path) -> None:
    """Plain git loses about 1 in 25 of these to a concurrent ``worktree prune`` ("failed to read ...commondir",
    "could not open .../locked"); under the gateway's lock none fails."""
    parent, locks = tmp_path / "worktrees", tmp_path / "locks"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(repo), str(parent), str(locks), f"r{i}", "12"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    errors = [racer.communicate(timeout=300)[1] for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0, 0, 0], errors
    assert Repo(repo).run("worktree", "list", "--porcelain").count("worktree ") == 1, "every record removed"


async def test_a_start_clears_what_a_crash_left_and_keeps_what_a_live_process_holds(config: Any, repo: Path) -> None:
    """A verification checkout whose owner died is removed; one whose owner lives stays. A worktree directory no
    task row publishes (half-made when a crash cut its making short) is discarded. Each is recorded."""
    gateway = Gateway(config)
    manifest = {"task_id": "T1", "objective": "x", "allowed_paths": ["src/**"], "verification": ["true"]}
    async with inproc_client(gateway, token(config, "planner", agent="planner")) as client:
        assert not (await client.call_tool("task_submit", {"manifest": manifest})).is_error
    locks = config.state / "locks"
    left, live = config.worktrees / f"{SCRATCH_PREFIX}dead", config.worktrees / f"{SCRATCH_PREFIX}live"
    for scratch in (left, live):
        make_worktree(Repo(repo), scratch, "HEAD", locks)
    half = config.worktrees / "T1"
    make_worktree(Repo(repo), half, "HEAD", locks, branch="task/T1", reset_branch=True)
    (half / "README.md").unlink()  # as if the checkout had been cut short
    with file_lock(locks / f"{live.name}.lock", "a verification still running"):
        gateway.recover()
    assert not left.exists() and live.exists() and not half.exists() and admin_dirs(Repo(repo), half) == []
    cleaned = {r.detail["what"]: r.detail["cleaned"] for r in ledger_rows(gateway, kind="recovery")}
    assert cleaned["verification checkouts"] == [f"removed the verification checkout {left.name} a crash left"]
    assert cleaned["tasks"] == ["discarded the worktree of T1 a crash left half-made"]


def test_a_worktree_a_worker_made_read_only_is_discarded_without_following_its_links(
    repo: Path, tmp_path: Path
) -> None:
    """A worker's directory made read-only (files in it cannot be unlinked) goes with the worktree; a link it left
    to a read-only directory outside is never followed: that directory keeps its mode and its files. (Run as
    root, nothing is read-only to rmtree: then only the link is put to the test.)"""
    locks, worktree = tmp_path / "locks", tmp_path / "worktrees" / "T1"
    make_worktree(Repo(repo), worktree, "HEAD", locks, branch="task/T1", reset_branch=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine\n")
    (worktree / "ro").mkdir()
    (worktree / "ro" / "f").write_text("x\n")
    (worktree / "ro" / "out").symlink_to(outside)
    for directory in (worktree / "ro", outside):
        directory.chmod(0o500)
    try:
        assert discard_worktree(Repo(repo), worktree, locks)
        assert not worktree.exists() and admin_dirs(Repo(repo), worktree) == []
        assert (outside.stat().st_mode & 0o777) == 0o500 and (outside / "keep").read_text() == "mine\n"
    finally:
        outside.chmod(0o700)
