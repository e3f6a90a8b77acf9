"""What the gateway's git costs per call on top of git itself (gateway/repo.py: the shadow git dir and the check
for planted links), interleaved on one scratch repository and one task worktree of it.

    .venv/bin/python bench/bench_repo.py              # 200 rounds
    .venv/bin/python bench/bench_repo.py --rounds 50 --refs 500

Each round runs, in a rotating order, the same git command three ways: ``main`` (``Repo.run`` of the
gateway/repo.py on branch ``--base``, read with ``git show``: GIT_COMMON_DIR alone), ``repo`` (this tree's
``Repo.run``: the shadow git dir and the check), and ``check`` (the check for planted links alone, no git).
Per call: the median wall time, and the mean CPU time (the gateway's and git's, from getrusage, whose ticks
are too coarse for a median; on a busy machine the wall time is mostly waiting for a core), with the ratios
repo/main of both.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from gateway.repo import Repo, layout, refuse_planted

COMMANDS = [
    ("rev-parse", "HEAD"),
    ("status", "--porcelain"),
    ("for-each-ref", "--count=5"),
    ("update-ref", "refs/heads/bench", "HEAD"),
]


def scratch(refs: int) -> tuple[Path, Path]:
    """A repository with 50 files, ``refs`` tags (loose) and a task worktree; (the checkout, the worktree)."""
    top = Path(tempfile.mkdtemp(prefix="bench-repo-"))
    root = top / "repo"
    repo = Repo(root)
    root.mkdir()
    repo.run("init", "-q", "-b", "main")
    for i in range(50):
        (root / "src" / f"d{i % 5}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"d{i % 5}" / f"f{i}.py").write_text(f"x = {i}\n")
    repo.run("add", "-A")
    repo.run("commit", "-q", "-m", "one")
    head = repo.run("rev-parse", "HEAD").strip()
    repo.run("update-ref", "--stdin", input="".join(f"create refs/tags/t{i} {head}\n" for i in range(refs)))
    repo.run("worktree", "add", "-q", "-b", "task/T1", str(top / "T1"), "main")
    return root, top / "T1"


def base_repo(branch: str) -> ModuleType:
    """gateway/repo.py as it is on ``branch``, loaded beside this tree's (it imports the same gateway modules)."""
    source = subprocess.run(
        ["git", "show", f"{branch}:gateway/repo.py"], capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="bench-repo-base-")) / "base_repo.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("base_repo", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms of this process and its children) of one call."""
    before = _cpu()
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000, (_cpu() - before) * 1000


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--refs", type=int, default=50, help="loose tags in the repository (default 50)")
    parser.add_argument("--base", default="main", help="the branch whose Repo is the baseline (default main)")
    options = parser.parse_args(argv)
    base = base_repo(options.base)
    checkout, worktree = scratch(options.refs)
    print(
        f"{'where':<10} {'command':<12} {'main ms':>8} {'repo ms':>8} {'check ms':>9} {'repo/main':>9}"
        f" {'main cpu':>9} {'repo cpu':>9} {'cpu ratio':>9}"
    )
    for name, root in (("workspace", checkout), ("worktree", worktree)):
        where = layout(root)
        assert where is not None
        for args in COMMANDS:
            ways: dict[str, Callable[[], object]] = {
                "main": lambda root=root, args=args: base.Repo(root).run(*args),  # type: ignore[misc]
                "repo": lambda root=root, args=args: Repo(root).run(*args),  # type: ignore[misc]
                "check": lambda where=where: refuse_planted(where),  # type: ignore[misc]
            }
            wall: dict[str, list[float]] = {way: [] for way in ways}
            cpu: dict[str, list[float]] = {way: [] for way in ways}
            order = list(ways)
            for i in range(options.rounds):
                for way in order[i % 3 :] + order[: i % 3]:
                    took, used = timed(ways[way])
                    wall[way].append(took)
                    cpu[way].append(used)
            med = {way: statistics.median(values) for way, values in wall.items()}
            mean = {way: statistics.fmean(values) for way, values in cpu.items()}
            print(
                f"{name:<10} {args[0]:<12} {med['main']:>8.2f} {med['repo']:>8.2f} {med['check']:>9.3f}"
                f" {med['repo'] / med['main']:>9.2f} {mean['main']:>9.2f} {mean['repo']:>9.2f}"
                f" {mean['repo'] / mean['main']:>9.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
