"""What the gateway's git costs per call on top of git itself (gateway/repo.py: the shadow git dir and the check
for planted links), interleaved on one scratch repository and one task worktree of it.

    .venv/bin/python bench/bench_repo.py              # 200 rounds
    .venv/bin/python bench/bench_repo.py --rounds 50 --refs 500

Each round runs, in a rotating order, the same git command three ways: ``bare`` (git with the environment
Repo set before this change: GIT_COMMON_DIR alone), ``repo`` (``Repo.run``: the shadow git dir and the
check), and ``check`` (the check for planted links alone, no git). Medians per call and the ratio repo/bare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gateway.repo import SAFE_CONFIG, Repo, common_dir, layout, refuse_planted

COMMANDS = [("rev-parse", "HEAD"), ("status", "--porcelain"), ("for-each-ref", "--count=5")]


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


def bare(root: Path, args: tuple[str, ...]) -> None:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TZ")}
    env |= {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMON_DIR": str(common_dir(root))}
    subprocess.run(["git", *SAFE_CONFIG, "-C", str(root), *args], capture_output=True, env=env, check=True)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--refs", type=int, default=50, help="loose tags in the repository (default 50)")
    options = parser.parse_args(argv)
    checkout, worktree = scratch(options.refs)
    print(f"{'where':<10} {'command':<14} {'bare ms':>8} {'repo ms':>8} {'check ms':>9} {'repo/bare':>9}")
    for name, root in (("workspace", checkout), ("worktree", worktree)):
        where = layout(root)
        assert where is not None
        for args in COMMANDS:
            ways: dict[str, Callable[[], object]] = {
                "bare": lambda root=root, args=args: bare(root, args),  # type: ignore[misc]
                "repo": lambda root=root, args=args: Repo(root).run(*args),  # type: ignore[misc]
                "check": lambda where=where: refuse_planted(where),  # type: ignore[misc]
            }
            times: dict[str, list[float]] = {way: [] for way in ways}
            order = list(ways)
            for i in range(options.rounds):
                for way in order[i % 3 :] + order[: i % 3]:
                    times[way].append(timed(ways[way]))
            med = {way: statistics.median(values) for way, values in times.items()}
            print(
                f"{name:<10} {args[0]:<14} {med['bare']:>8.2f} {med['repo']:>8.2f} {med['check']:>9.3f}"
                f" {med['repo'] / med['bare']:>9.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
