"""Bounds: a 16 KiB command of any shape is described and decided, and the answer is tier 3 (the analysis
gave up, saying why) or the right one. Nothing here is timed: a loaded CI machine would make a timed
test flaky, and the shapes are what matters. The times are measured by hand:

    .venv/bin/python tests/test_shell_bounds.py      # median describe and decide time per shape

The walk is linear (iterative over lists and pipelines, bounded nesting), it stops after MAX_COMMANDS
simple commands or MAX_WORDS words, and a string that plainly holds far more command separators than
that is not parsed at all (tree-sitter-bash is superlinear on long pipelines).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import anyio
import pytest

from gateway.effects.paths import Workspace
from gateway.effects.shell import MAX_COMMAND_BYTES, MAX_COMMANDS, describe_command
from gateway.identity.roles import RoleSet
from gateway.policy.embedded import EmbeddedEngine
from gateway.types import Decision, Effects

ROOT = Path(__file__).resolve().parent.parent


def fill(unit: str, head: str = "", tail: str = "") -> str:
    """``head + unit * n + tail`` as long as fits in 16 KiB."""
    n = (MAX_COMMAND_BYTES - len(head) - len(tail)) // len(unit)
    return head + unit * n + tail


# (name, command, the tier it must get): 3 for every shape the analysis gives up on
SHAPES = [
    ("repeated cd src;cd ..", fill("cd src;cd ..;"), 3),
    ("9 KB of cd src;cd ..", ("cd src;cd ..;" * 700)[:9000], 3),
    ("nested $(...)", "echo " + "$(echo " * 2000 + "x" + ")" * 2000, 3),
    ("nested backquotes", "echo " + "`echo " * 10 + "x" + "`" * 10, 3),
    ("long pipeline a|b|c", fill("a|", tail="b"), 3),
    ("spaced pipeline", fill("cat x | ", tail="wc"), 3),
    ("8,000 a;", fill("a;"), 3),
    ("&& chain", fill("true&&", tail="true"), 3),
    ("|| chain", fill("false||", tail="true"), 3),
    ("300 commands", "true && " * 300 + "true", 3),
    ("nested subshells", "( " * 4000 + "ls" + " )" * 4000, 3),
    ("nested groups", "{ " * 3000 + "ls" + "; }" * 3000, 3),
    ("nested if", "if true; then " * 1000 + "ls" + "; fi" * 1000, 3),
    ("arithmetic parens", "(" * 5000 + "x" + ")" * 5000, 1),
    ("one long word", "echo " + "a" * (MAX_COMMAND_BYTES - 10), 1),
    ("8,000 words", fill(" a", head="echo"), 3),
    ("1,000 words", "echo" + " a" * 1000, 1),
    ("8,000 globs", fill(" *", head="cat"), 3),
    ("brace expansions", fill("{a,b}"), 3),
    ("heredoc of substitutions", "cat <<EOF\n" + "$(id)\n" * 2500 + "EOF", 3),
    ("many heredocs", fill("cat <<A\nx\nA\n"), 3),
    ("long sed script", "sed '" + "s/a/b/;" * 2300 + "' README.md", 1),
    ("long awk program", "awk '" + '{print "}" > "x"};' * 700 + "' README.md", 1),
    ("long git -c", fill(" -c user.name=x", head="git", tail=" log"), 3),
    ("500 git -c", "git" + " -c user.name=x" * 500 + " log", 1),
    ("find -exec", fill(" -exec rm {} ;", head="find ."), 3),
    ("assignments", fill("a=1 ", tail="ls"), 3),
    ("1,000 assignments", "a=1 " * 1000 + "ls", 1),
    ("redirections", fill(" >a", head="ls"), 3),
    ("1,000 redirections", "ls" + " >a" * 1000, 1),
    ("1,000 distinct redirections", "ls" + "".join(f" >d{i}" for i in range(1000)), 1),
    ("case items", fill("a) b;; ", head="case x in ", tail="esac"), 3),
    ("functions", fill("f() { a; }; "), 3),
    ("unterminated quote", "echo '" + "a" * (MAX_COMMAND_BYTES - 10), 3),
    ("one byte over", "echo " + "a" * (MAX_COMMAND_BYTES - 4), 3),
]


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine(ROOT / "policies", {"roles": RoleSet.load(ROOT / "roles").as_data()})


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("bounds")
    (root / "src").mkdir()
    (root / "README.md").write_text("x\n")
    return Workspace(root)


def decide(engine: EmbeddedEngine, workspace: Workspace, effects: Effects) -> Decision:
    doc = {
        "version": 2,
        "principal": {"agent": "op", "role": "developer", "task": None, "jti": None, "exp": None},
        "tool": {"name": "shell_run", "provider": "builtin", "annotations": None, "analysed": True},
        "arguments": {},
        "effects": effects.model_dump(),
        "task": None,
        "intent": None,
        "context": {"workspace": str(workspace.root), "trace_id": None, "time": "2026-11-22T10:00:00+00:00"},
    }
    return anyio.run(engine.decide, doc)


@pytest.mark.parametrize(("name", "command", "tier"), SHAPES, ids=[s[0] for s in SHAPES])
def test_every_shape_is_described_and_decided(
    name: str, command: str, tier: int, engine: EmbeddedEngine, workspace: Workspace
) -> None:
    fx = describe_command(command, workspace, workspace.root)
    assert len(fx.commands) <= MAX_COMMANDS
    decision = decide(engine, workspace, fx)
    assert decision.rules != ["engine.error"], decision
    assert decision.tier == tier, (name, decision, fx.opaque[:3])
    if tier == 3:
        assert fx.opaque, "a shape the analysis gives up on says why"


def test_the_bound_counts_commands_not_bytes(workspace: Workspace) -> None:
    fx = describe_command("true; " * (MAX_COMMANDS - 1) + "true", workspace, workspace.root)
    assert len(fx.commands) == MAX_COMMANDS and fx.opaque == []
    fx = describe_command("true; " * MAX_COMMANDS + "true", workspace, workspace.root)
    assert "more than 256 simple commands" in fx.opaque[0]


def bench() -> None:  # pragma: no cover - run by hand
    import tempfile

    root = Path(tempfile.mkdtemp())
    (root / "src").mkdir()
    (root / "README.md").write_text("x\n")
    workspace = Workspace(root)
    engine = EmbeddedEngine(ROOT / "policies", {"roles": RoleSet.load(ROOT / "roles").as_data()})
    print(f"{'shape':28} {'bytes':>6} {'cmds':>5} {'describe':>9} {'decide':>8} {'total':>8}  tier")
    worst = 0.0
    for name, command, _ in SHAPES:
        described, decided = [], []
        for _ in range(7):
            started = time.perf_counter()
            fx = describe_command(command, workspace, workspace.root)
            middle = time.perf_counter()
            decision = decide(engine, workspace, fx)
            described.append((middle - started) * 1000)
            decided.append((time.perf_counter() - middle) * 1000)
        d, e = statistics.median(described), statistics.median(decided)
        worst = max(worst, d + e)
        print(f"{name:28} {len(command):6} {len(fx.commands):5} {d:7.1f}ms {e:6.1f}ms {d + e:6.1f}ms  {decision.tier}")
    print(f"worst total (median of 7): {worst:.1f} ms")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(bench())
