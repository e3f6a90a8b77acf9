"""The labelled policy corpus (tests/policy_corpus.yaml) against the default bundle.

Every case is a real call (``shell_run`` with a command, or an fs_* tool with a path) decided by one
in-process Gateway through the same stages ``gateway check`` runs (resolve, validate, describe, decide),
in a workspace the fixture builds: a git repository with secrets, CI config, symlinks out of it and a
fake $HOME. The tier cases use the ``operator`` role (every built-in tool, max_tier 2), so the tier is
what is measured: tier 1 and 2 allow, tier 3 asks. The worker cases use the worker role with and
without a claimed task.

The key assertion is ``test_dangerous_cases_are_never_allowed``: every case in a group marked
``dangerous`` must be asked about (tier 3) or denied. The per-group tests check the exact labels; a
failure prints the mismatches and a confusion summary (expected vs decided).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from conftest import add_role, make_repo, workspace_for_tests

from gateway.config import GatewayConfig
from gateway.runtime import Gateway
from gateway.tasks.models import TaskManifest
from gateway.types import Principal

CORPUS_FILE = Path(__file__).with_name("policy_corpus.yaml")
CORPUS = yaml.safe_load(CORPUS_FILE.read_text(encoding="utf-8"))

Label = tuple[int, str]


@dataclass(frozen=True)
class Case:
    kind: str  # shell | paths | claimed | unclaimed | gap
    group: str
    tool: str
    arguments: dict[str, Any]
    expect: Label
    dangerous: bool
    why: str = ""

    @property
    def label(self) -> str:
        if self.tool == "shell_run":
            return f"shell_run {self.arguments['command']!r}"
        shown = {k: v for k, v in self.arguments.items() if k not in ("content", "old_string", "new_string")}
        return f"{self.tool} {shown}"


def load_cases() -> list[Case]:
    cases: list[Case] = []
    for kind in ("shell", "paths"):
        for group in CORPUS[kind]:
            expect = tuple(group["expect"])
            for item in group["cases"]:
                if kind == "shell":
                    tool, arguments = "shell_run", {"command": item}
                else:
                    tool, arguments = item[0], item[1]
                cases.append(Case(kind, group["group"], tool, arguments, expect, group.get("dangerous", False)))  # type: ignore[arg-type]
    for kind in ("claimed", "unclaimed"):
        for tool, arguments, expect in CORPUS["worker"][kind]:
            dangerous = expect[0] == 3 or expect[1] == "deny"
            cases.append(Case(kind, f"worker ({kind})", tool, arguments, tuple(expect), dangerous))  # type: ignore[arg-type]
    for gap in CORPUS["known_gaps"]:
        command = {"command": gap["cmd"]}
        cases.append(Case("gap", "known gaps", "shell_run", command, (3, "ask"), True, gap["why"]))
    return cases


CASES = load_cases()


@dataclass
class World:
    workspace: Path
    home: Path
    state: Path
    decisions: dict[int, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    def substitute(self, value: Any) -> Any:
        if isinstance(value, str):
            for name, path in (("{ws}", self.workspace), ("{home}", self.home), ("{state}", self.state)):
                value = value.replace(name, str(path))
            return value
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        return value

    def decided(self, case: Case) -> Label:
        decision = self.decisions[id(case)]
        return decision["tier"], decision["action"]


WORKSPACE_FILES = {
    "package.json": '{"name": "demo", "scripts": {"build": "true"}}\n',
    "requirements.txt": "requests\n",
    "Makefile": "all:\n\ttrue\n",
    "build/out.txt": "built\n",
    "dist/app.whl": "not really a wheel\n",
    "scripts/deploy.sh": "echo deploying\n",
    ".env": "API_KEY=sk-live-123\n",
    ".env.example": "API_KEY=\n",
    "config/secrets.yml": "token: abc\n",
    "server.key": "-----BEGIN PRIVATE KEY-----\n",
    ".github/workflows/ci.yml": "on: push\n",
    ".gitlab-ci.yml": "test:\n  script: x\n",
    "src/environment.py": "NAME = 'dev'\n",
    ".claude/settings.json": '{"hooks": {}}\n',
    ".mcp.json": '{"mcpServers": {}}\n',
    "CLAUDE.md": "# Notes for agents\n",
    ".vscode/settings.json": "{}\n",
    ".cargo/config.toml": '[alias]\nship = "publish --no-verify"\nqa = "test"\n',
}
GIT_ALIASES = {"alias.pub": "push", "alias.short": "status --short", "alias.nuke": "!rm -rf /"}


def make_workspace(root: Path) -> tuple[GatewayConfig, Path]:
    """The corpus workspace under ``root`` (see the YAML's header) and the fake home; the corpus roles added."""
    home = root / "home"
    for rel, text in {".ssh/id_rsa": "PRIVATE", ".bashrc": "", ".aws/credentials": "[default]\n"}.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the workspace\n")
    repo = make_repo(root / "repo")
    for rel, text in WORKSPACE_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / ".venv" / "bin").mkdir(parents=True)
    os.symlink("src/app.py", repo / "link_in")
    os.symlink(outside / "secret.txt", repo / "link_out")
    os.symlink(outside, repo / "link_dir_out")
    os.symlink(".claude", repo / "link_claude")
    for key, value in GIT_ALIASES.items():
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    config = workspace_for_tests(repo)
    for name, role in CORPUS["roles"].items():
        add_role(config, name, **role)
    return config, home


def build_world(root: Path, explain: bool = False) -> Iterator[World]:
    """Every case decided once; ``explain`` keeps each decision's input document (``"input"``) and fired rules."""
    config, home = make_workspace(root)
    gateway = Gateway(config)
    world = World(workspace=config.workspace, home=home, state=config.state)
    operator = Principal(agent="op", role="operator")
    claimed = Principal(agent="w1", role="worker")
    unclaimed = Principal(agent="w2", role="worker")
    task = CORPUS["worker"]["task"]
    manifest = TaskManifest(objective="corpus", verification=["true"], **task)

    async def decide_all() -> None:
        await gateway.board.submit(manifest, by="planner", trace_id=None)
        await gateway.board.claim(task["task_id"], claimed)
        started = time.perf_counter()
        for case in CASES:
            principal = {"claimed": claimed, "unclaimed": unclaimed}.get(case.kind, operator)
            arguments = world.substitute(case.arguments)
            world.decisions[id(case)] = await gateway.check(principal, case.tool, arguments, explain=explain)
        world.seconds = time.perf_counter() - started

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))  # `~` in a command expands to the fake home
        anyio.run(decide_all)
    yield world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from build_world(tmp_path_factory.mktemp("corpus"))


def report(world: World, cases: list[Case], title: str) -> str:
    """The mismatches, one per line, and a confusion summary of expected vs decided labels."""
    lines = [f"{title}: {len(cases)} case(s)"]
    for case in cases:
        decision = world.decisions[id(case)]
        tier, action = world.decided(case)
        lines.append(
            f"  [{case.group}] {case.label}\n"
            f"      expected tier {case.expect[0]} {case.expect[1]}, got tier {tier} {action}"
            f"  rules={decision['rules']}  reasons={decision['reasons'][:2]}"
        )
    lines.append(confusion(world, cases))
    return "\n".join(lines)


def confusion(world: World, cases: list[Case]) -> str:
    labels = ["1 allow", "2 allow", "3 ask", "deny"]

    def name(label: Label) -> str:
        return "deny" if label[1] == "deny" else f"{label[0]} {label[1]}"

    counts = Counter((name(c.expect), name(world.decided(c))) for c in cases)
    width = max(len(x) for x in labels) + 2
    rows = ["  confusion (rows: expected, columns: decided)", "  " + " " * 10 + "".join(x.rjust(width) for x in labels)]
    for expected in labels:
        row = [str(counts[(expected, got)] or ".").rjust(width) for got in labels]
        rows.append("  " + expected.ljust(10) + "".join(row))
    return "\n".join(rows)


# --- the corpus is big enough and fast -------------------------------------------------------------


def test_corpus_size() -> None:
    shell = [c for c in CASES if c.kind == "shell"]
    paths = [c for c in CASES if c.kind == "paths"]
    assert len(shell) >= 200, len(shell)
    assert len(paths) >= 50, len(paths)
    assert len({c.arguments["command"] for c in shell}) == len(shell), "duplicate shell cases"
    dangerous = [c for c in shell + paths if c.dangerous]
    assert len(dangerous) >= 150 and len(shell) + len(paths) - len(dangerous) >= 100


def test_corpus_decides_quickly(world: World) -> None:
    # one in-process gateway, no server per case: the whole corpus takes about a second
    assert world.seconds < 20, f"{len(CASES)} decisions took {world.seconds:.1f}s"


# --- the key assertion -----------------------------------------------------------------------------


def test_dangerous_cases_are_never_allowed(world: World) -> None:
    labelled = [c for c in CASES if c.dangerous and c.kind != "gap"]
    allowed = [c for c in labelled if world.decided(c)[1] == "allow"]
    assert not allowed, report(world, allowed, "dangerous cases the policy ALLOWED")
    below = [c for c in labelled if world.decided(c)[1] != "deny" and world.decided(c)[0] != 3]
    assert not below, report(world, below, "dangerous cases asked about below tier 3")


# --- exact labels, one test per group --------------------------------------------------------------


GROUPS = list(dict.fromkeys(c.group for c in CASES if c.kind != "gap"))


@pytest.mark.parametrize("group", GROUPS)
def test_group_labels(world: World, group: str) -> None:
    cases = [c for c in CASES if c.group == group and c.kind != "gap"]
    wrong = [c for c in cases if world.decided(c) != c.expect]
    assert not wrong, report(world, wrong, f"mismatches in {group!r}")


def test_every_decision_names_its_rules_and_reasons(world: World) -> None:
    missing = [c for c in CASES if not world.decisions[id(c)]["rules"] or not world.decisions[id(c)]["reasons"]]
    assert not missing, report(world, missing, "decisions without rules or reasons")
    asked = [c for c in CASES if world.decisions[id(c)]["action"] == "ask"]
    vague = [
        c
        for c in asked
        if not any(r.startswith(("tiers.", "paths.", "secrets.")) for r in world.decisions[id(c)]["rules"])
    ]
    assert not vague, report(world, vague, "tier-3 asks without a concern's rule")


def test_no_case_is_an_engine_error(world: World) -> None:
    errors = [c for c in CASES if "engine.error" in world.decisions[id(c)]["rules"]]
    assert not errors, report(world, errors, "cases the policy engine failed on (a deny, but a bug)")


# --- known gaps: dangerous cases the bundle does not catch yet -----------------------------------------


@pytest.mark.parametrize(
    "gap", [c for c in CASES if c.kind == "gap"] or [None], ids=lambda c: c.arguments["command"] if c else "none"
)
def test_known_gaps(world: World, gap: Case | None) -> None:
    if gap is None:
        pytest.skip("no known gaps")
    if world.decided(gap)[1] == "allow":
        pytest.xfail(f"known gap: {gap.why}")
    pytest.fail(f"{gap.label} is no longer allowed ({world.decided(gap)}): move it into a dangerous group")
