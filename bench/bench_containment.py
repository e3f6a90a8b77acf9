"""What containment costs: the sandbox around a command, decisions in worker processes, and the deadline.

Run by hand (it is not a test, and nothing asserts on its numbers):

    .venv/bin/python bench/bench_containment.py             # about a minute
    .venv/bin/python bench/bench_containment.py --runs 100 --json
    .venv/bin/python bench/bench_containment.py --only checkpoint --runs 30
    .venv/bin/python bench/bench_containment.py --only bounds --runs 30
    .venv/bin/python bench/bench_containment.py --only soak --calls 2000    # ten minutes or so

Six sections, on a scratch workspace (``gateway init``); the soak runs only when asked for:

    sandbox     one command run as shell_run runs it (bash -c, output captured), unconfined and inside
                bubblewrap, interleaved; p50 and p95 of each and the ratio
    decisions   one decision (describe + decide) for typical commands: in this process, and in the worker
                processes a running gateway uses (the round trip to a worker included)
    deadline    every case of the labelled policy corpus (tests/policy_corpus.yaml) described and decided as
                a running gateway does it; the slowest against policy.deadline_s, and how many went over
    checkpoint  one tier-2 checkpoint (snapshot, refs, vault) with its ``git add`` unconfined (the gateway
                before the git wall: ``sandbox.mode: off``) and behind the wall, interleaved; p50 and p95
    bounds      ``true`` in bubblewrap without and with its memory cgroup (where the machine gives one),
                interleaved; and fs_search's matching over the gateway's own source, as it was (``re``, line
                by line) and as it is (RE2 over each file, then the lines it lands on), interleaved
    soak        ``--calls`` tier-2 Claude Code hook decisions in a row (describe, decide, checkpoint), as a
                developer's session makes them, one file changed before each; the median of each tenth of
                the run (its wall time too), and every fifth call beside a fresh gateway's (a new workspace
                each tenth): the last tenth over the first, raw and against the fresh one (what the machine's
                other load does to both cancels out); a tier-1 decision every tenth call for comparison, and
                what the vault and the repository hold at the end
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.bootstrap import init_workspace  # noqa: E402
from gateway.checkpoints import Checkpoints  # noqa: E402
from gateway.config import SandboxConfig  # noqa: E402
from gateway.hook import hook_call, judge  # noqa: E402
from gateway.pipeline import Call  # noqa: E402
from gateway.repo import Repo  # noqa: E402
from gateway.runtime import Gateway  # noqa: E402
from gateway.sandbox import Sandbox  # noqa: E402
from gateway.tools.files import LineSearch  # noqa: E402
from gateway.tools.shell import run_command, run_confined, sandbox_env  # noqa: E402
from gateway.types import Origin, Principal  # noqa: E402

COMMANDS = ["true", "ls -la src", "git status --porcelain", "python3 -c 'print(1)'"]
DECISIONS = ["pytest -q tests/test_x.py", "git diff --stat", "ls -la src && grep -rn TODO src | head -20"]


async def _quiet(progress: float, total: float | None, message: str | None) -> None:
    return None


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def scratch() -> Path:
    root = Path(tempfile.mkdtemp(prefix="bench-containment-"))
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("def answer():\n    return 41\n")
    git = Repo(repo)
    git.run("init", "-q", "-b", "main")
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "initial")
    return repo


async def sandbox_section(gateway: Gateway, runs: int) -> list[dict[str, Any]]:
    root = gateway.config.workspace
    confinement = gateway.sandbox.confine(writable=[root], cwd=root, protect=gateway.protected_in(root))
    env = sandbox_env(gateway.config.shell, root)
    rows = []
    for command in COMMANDS:
        bare: list[float] = []
        boxed: list[float] = []
        for i in range(runs + 3):  # interleaved, the first three of each a warm-up
            began = time.perf_counter()
            await run_command(["/bin/bash", "-c", command], root, env, 30, 65536, _quiet)
            middle = time.perf_counter()
            await run_confined(gateway.sandbox, confinement, command, env, 30, 65536, _quiet)
            done = time.perf_counter()
            if i >= 3:
                bare.append(middle - began)
                boxed.append(done - middle)
        rows.append(
            {
                "command": command,
                "unconfined_p50_ms": statistics.median(bare) * 1000,
                "sandbox_p50_ms": statistics.median(boxed) * 1000,
                "sandbox_p95_ms": quantile(boxed, 0.95) * 1000,
                "adds_p50_ms": (statistics.median(boxed) - statistics.median(bare)) * 1000,
                "ratio": statistics.median(boxed) / statistics.median(bare),
            }
        )
    return rows


async def decide(gateway: Gateway, principal: Principal, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    call = Call(tool=tool, arguments=arguments, origin=Origin(transport="inprocess", protocol_version="bench"))
    call.principal = principal
    began = time.perf_counter()
    done = await gateway.judge.run(call)
    return time.perf_counter() - began, done


async def decisions_section(inline: Gateway, isolated: Gateway, runs: int) -> list[dict[str, Any]]:
    principal = Principal(agent="bench", role="developer")
    rows = []
    for command in DECISIONS:
        times: dict[str, list[float]] = {"inline": [], "workers": []}
        for i in range(runs + runs // 10):
            for name, gateway in (("inline", inline), ("workers", isolated)):
                seconds, _ = await decide(gateway, principal, "shell_run", {"command": command})
                if i >= runs // 10:
                    times[name].append(seconds)
        rows.append(
            {
                "command": command,
                "inline_p50_ms": statistics.median(times["inline"]) * 1000,
                "workers_p50_ms": statistics.median(times["workers"]) * 1000,
                "workers_p99_ms": quantile(times["workers"], 0.99) * 1000,
            }
        )
    return rows


async def deadline_section(gateway: Gateway) -> dict[str, Any]:
    corpus = yaml.safe_load((ROOT / "tests" / "policy_corpus.yaml").read_text())
    principal = Principal(agent="bench", role="developer")
    cases: list[tuple[str, dict[str, Any]]] = []
    for group in corpus["shell"]:
        cases += [("shell_run", {"command": c}) for c in group["cases"]]
    for group in corpus["paths"]:
        cases += [(tool, arguments) for tool, arguments in group["cases"]]
    ws = str(gateway.config.workspace)
    seconds: list[tuple[float, str]] = []
    over = 0
    for tool, arguments in cases:
        arguments = json.loads(
            json.dumps(arguments)
            .replace("{ws}", ws)
            .replace("{home}", "/root")
            .replace("{state}", str(gateway.config.state))
        )
        took, call = await decide(gateway, principal, tool, arguments)
        seconds.append((took, json.dumps(arguments)[:80]))
        over += bool(call.error is not None and call.error.code == "decision_deadline")
    values = [s for s, _ in seconds]
    slowest = max(seconds)
    return {
        "cases": len(values),
        "deadline_ms": gateway.config.policy.deadline_s * 1000,
        "p50_ms": statistics.median(values) * 1000,
        "p99_ms": quantile(values, 0.99) * 1000,
        "max_ms": slowest[0] * 1000,
        "slowest": slowest[1],
        "over_deadline": over,
    }


def checkpoint_section(gateway: Gateway, runs: int) -> dict[str, Any]:
    root = gateway.config.workspace
    small_project(root)  # one file changed before each checkpoint
    walled = gateway.checkpoints
    bare = Checkpoints(gateway.db, Sandbox(SandboxConfig(mode="off")), gateway.config)
    times: dict[str, list[float]] = {"unconfined": [], "walled": []}
    for i in range(runs + 3):
        for name, checkpoints in (("unconfined", bare), ("walled", walled)):
            (root / "src" / "app.py").write_text(f"def answer():\n    return {i}\n")
            began = time.perf_counter()
            checkpoints.take(root, f"bench-{name}-{i}", paths=[])
            if i >= 3:
                times[name].append(time.perf_counter() - began)
    bare_p50, walled_p50 = statistics.median(times["unconfined"]), statistics.median(times["walled"])
    return {
        "unconfined_p50_ms": bare_p50 * 1000,
        "walled_p50_ms": walled_p50 * 1000,
        "walled_p95_ms": quantile(times["walled"], 0.95) * 1000,
        "adds_p50_ms": (walled_p50 - bare_p50) * 1000,
    }


SEARCHES = [r"def \w+\(self", "TODO", r"(?i)import\s+(anyio|re)\b"]


async def bounds_section(gateway: Gateway, runs: int) -> dict[str, Any]:
    root = gateway.config.workspace
    env = sandbox_env(gateway.config.shell, root)
    grouped = gateway.sandbox
    plain = Sandbox(grouped.config.model_copy(update={"memory_cgroup": "off"}), hidden=grouped.hidden)
    figures: dict[str, Any] = {"memory_cgroup": grouped.groups is not None}
    if grouped.groups is not None:
        times: dict[str, list[float]] = {"without": [], "with": []}
        for i in range(runs + 3):
            for name, sandbox in (("without", plain), ("with", grouped)):
                confinement = sandbox.confine(writable=[root], cwd=root)
                began = time.perf_counter()
                await run_confined(sandbox, confinement, "true", env, 30, 65536, _quiet)
                if i >= 3:
                    times[name].append(time.perf_counter() - began)
        without, with_ = statistics.median(times["without"]), statistics.median(times["with"])
        figures |= {"cgroup_without_p50_ms": without * 1000, "cgroup_with_p50_ms": with_ * 1000}
    texts = [path.read_text() for path in sorted((ROOT / "gateway").rglob("*.py"))]
    figures["search_lines"] = sum(text.count("\n") for text in texts)
    figures["search"] = []
    for source in SEARCHES:
        old, new = re.compile(source), LineSearch.of(source)
        engines = {
            "re": lambda: sum(1 for text in texts for line in text.splitlines() if old.search(line)),  # noqa: B023
            "re2": lambda: sum(1 for text in texts for _ in new.matching(text, lambda: None)),  # noqa: B023
        }
        found: dict[str, list[float]] = {"re": [], "re2": []}
        for i in range(max(3, runs // 10) + 1):
            for name, search in engines.items():
                began = time.perf_counter()
                hits = search()
                if i >= 1:
                    found[name].append(time.perf_counter() - began)
        re_p50, re2_p50 = statistics.median(found["re"]), statistics.median(found["re2"])
        figures["search"].append({"pattern": source, "hits": hits, "re_ms": re_p50 * 1000, "re2_ms": re2_p50 * 1000})
    return figures


def hook_event(command: str) -> str:
    return json.dumps(
        {"session_id": "soak", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}}
    )


def small_project(root: Path) -> None:
    """50 files in 5 directories under src/ (what the checkpoint and soak sections checkpoint)."""
    for n in range(50):
        (root / "src" / f"m{n % 5}").mkdir(exist_ok=True)
        (root / "src" / f"m{n % 5}" / f"f{n}.py").write_text(f"x = {n}\n" * 20)


class HookSession:
    """A developer's Claude Code session on one gateway: hook decisions, timed, one file changed before each."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.root = gateway.config.workspace
        small_project(self.root)
        self.principal = Principal(agent="bench", role="developer")
        self.calls = 0

    async def decide(self, command: str) -> float:
        (self.root / "src" / "m0" / "f0.py").write_text(f"x = {self.calls}\n")
        self.calls += 1
        began = time.perf_counter()
        call = await judge(self.gateway, hook_call("inprocess"), hook_event(command), lambda: self.principal)
        took = time.perf_counter() - began
        if command == TIER2 and (call.outcome != "allowed" or not call.safeguard):
            raise RuntimeError(f"not a tier-2 call with a checkpoint: {call.outcome} {call.error}")
        return took


TIER2, TIER1 = "rm -f src/scratch.tmp", "ls src"


async def soak_section(gateway: Gateway, calls: int) -> dict[str, Any]:
    """The soaked gateway's tier-2 decisions, and every fifth one beside a fresh gateway's (a new workspace and
    state dir each tenth of the run): the ratio of the two says how the soak grew, whatever else the machine did."""
    soaked = HookSession(gateway)
    started = time.perf_counter()
    tenth = max(1, calls // 10)
    windows: list[dict[str, Any]] = []
    tier1: list[float] = []
    tier2: list[float] = []
    for first in range(0, calls, tenth):
        control = HookSession(Gateway(init_workspace(scratch()), isolated=False))
        for _ in range(3):  # its first checkpoint makes the vault and copies the history
            await control.decide(TIER2)
        times: list[float] = []
        paired: list[tuple[float, float]] = []
        for n in range(first, min(first + tenth, calls)):
            took = await soaked.decide(TIER2)
            times.append(took)
            if (n - first) % 5 == 0:
                paired.append((took, await control.decide(TIER2)))
            if n % 10 == 0:  # the two tiers side by side, now and then
                tier1.append(await soaked.decide(TIER1))
                tier2.append(took)
        windows.append(
            {
                "calls": f"{first + 1}-{min(first + tenth, calls)}",
                "p50_ms": statistics.median(times) * 1000,
                "fresh_p50_ms": statistics.median(f for _, f in paired) * 1000,
                "over_fresh": statistics.median(s for s, _ in paired) / statistics.median(f for _, f in paired),
                "ended_s": time.perf_counter() - started,
            }
        )
    vault = gateway.checkpoints.vault.path
    counts = dict(line.split(": ") for line in Repo(vault).run("count-objects", "-v").splitlines())
    return {
        "calls": calls,
        "windows": windows,
        "last_over_first": windows[-1]["p50_ms"] / windows[0]["p50_ms"],
        "growth_over_fresh": windows[-1]["over_fresh"] / windows[0]["over_fresh"],
        "tier1_p50_ms": statistics.median(tier1) * 1000,
        "tier2_p50_ms": statistics.median(tier2) * 1000,
        "vault_mb": sum(p.stat().st_size for p in vault.rglob("*") if p.is_file()) / 1e6,
        "vault_loose_objects": int(counts["count"]),
        "vault_packs": int(counts["packs"]),
        "vault_refs": len(gateway.checkpoints.vault.checkpoints()),
        "repository_refs": len(Repo(soaked.root).run("for-each-ref", "refs/gateway/checkpoints/").splitlines()),
        "restorable": len(gateway.db.query("SELECT id FROM checkpoints WHERE ref IS NOT NULL")),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    repo = scratch()
    config = init_workspace(repo)
    inline, isolated = Gateway(config, isolated=False), Gateway(config)
    if args.only == "checkpoint":
        return {"checkpoint": checkpoint_section(inline, args.runs)}
    if args.only == "bounds":
        return {"bounds": await bounds_section(inline, args.runs)}
    if args.only == "soak":
        return {"soak": await soak_section(inline, args.calls)}
    async with isolated.running():
        return {
            "sandbox": await sandbox_section(inline, args.runs),
            "decisions": await decisions_section(inline, isolated, args.runs),
            "deadline": await deadline_section(isolated),
            "checkpoint": checkpoint_section(inline, args.runs),
            "bounds": await bounds_section(inline, args.runs),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="timed runs per command (default 60)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--only", choices=["checkpoint", "bounds", "soak"], help="run one section")
    parser.add_argument("--calls", type=int, default=2000, help="tier-2 calls in the soak (default 2000)")
    args = parser.parse_args(argv)
    figures = anyio.run(main_async, args)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print("sandbox: a command as shell_run runs it, unconfined and in bubblewrap (p50 / p95 ms)")
    for row in figures.get("sandbox", []):
        print(
            f"  {row['command']:32} {row['unconfined_p50_ms']:7.2f} -> {row['sandbox_p50_ms']:7.2f} / "
            f"{row['sandbox_p95_ms']:7.2f}   +{row['adds_p50_ms']:.2f} ms  ({row['ratio']:.2f}x)"
        )
    print("decisions: describe + decide, in this process vs in the worker processes (p50 ms, workers p99)")
    for row in figures.get("decisions", []):
        print(
            f"  {row['command']:46} {row['inline_p50_ms']:6.2f}  {row['workers_p50_ms']:6.2f}  "
            f"p99 {row['workers_p99_ms']:6.2f}"
        )
    if "soak" in figures:
        print_soak(figures["soak"])
    b = figures.get("bounds")
    if b is not None and b["memory_cgroup"]:
        print(
            f"bounds: true in bubblewrap without its memory cgroup {b['cgroup_without_p50_ms']:.1f} ms -> with it "
            f"{b['cgroup_with_p50_ms']:.1f} ms p50"
        )
    elif b is not None:
        print("bounds: no memory cgroup on this machine")
    for row in b["search"] if b is not None else []:
        print(
            f"  search {b['search_lines']} lines for {row['pattern']!r:34} re {row['re_ms']:6.1f} ms, RE2 "
            f"{row['re2_ms']:6.1f} ms ({row['re2_ms'] / row['re_ms']:.2f}x), {row['hits']} hits"
        )
    if "checkpoint" not in figures:
        return 0
    c = figures["checkpoint"]
    print(
        f"checkpoint: git add unconfined {c['unconfined_p50_ms']:.1f} ms -> behind the wall "
        f"{c['walled_p50_ms']:.1f} ms (p95 {c['walled_p95_ms']:.1f}), +{c['adds_p50_ms']:.1f} ms p50"
    )
    if "deadline" not in figures:
        return 0
    d = figures["deadline"]
    print(
        f"deadline: {d['cases']} corpus cases as a running gateway decides them: p50 {d['p50_ms']:.2f} ms, "
        f"p99 {d['p99_ms']:.2f} ms, max {d['max_ms']:.2f} ms ({d['slowest']}); "
        f"deadline {d['deadline_ms']:.0f} ms, {d['over_deadline']} over"
    )
    return 0


def print_soak(soak: dict[str, Any]) -> None:
    print(
        f"soak: {soak['calls']} tier-2 hook decisions (describe, decide, checkpoint) in a row; p50 by tenth, and "
        "beside a fresh gateway's (every fifth call)"
    )
    for row in soak["windows"]:
        print(
            f"  calls {row['calls']:>11}  {row['p50_ms']:7.1f} ms   fresh {row['fresh_p50_ms']:7.1f} ms   "
            f"soaked/fresh {row['over_fresh']:.2f}   (done at {row['ended_s']:6.0f} s)"
        )
    print(
        f"  last tenth / first tenth: {soak['last_over_first']:.2f}x raw, {soak['growth_over_fresh']:.2f}x against a "
        f"fresh gateway at the same moment; tier-2 {soak['tier2_p50_ms']:.1f} ms vs tier-1 "
        f"{soak['tier1_p50_ms']:.1f} ms p50 (side by side, every tenth call)"
    )
    print(
        f"  at the end: vault {soak['vault_mb']:.1f} MB, {soak['vault_loose_objects']} loose objects, "
        f"{soak['vault_packs']} packs, {soak['vault_refs']} checkpoint refs ({soak['restorable']} restorable); "
        f"{soak['repository_refs']} checkpoint refs in the repository"
    )


if __name__ == "__main__":
    sys.exit(main())
