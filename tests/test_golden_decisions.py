"""Golden decisions: the embedded engine and the OPA engine decide one corpus of input documents identically.

The corpus is every case of tests/policy_corpus.yaml (shell commands, paths, a worker with and without a
claim, the known gaps), each as the input document the gateway's own stages built for it, plus a few
documents changed by hand to reach the rules the corpus calls do not (separation of duty, the commit rules,
an unknown role or tool). Every rule the bundle can name is fired by at least one of them.

Each document is decided by the embedded engine (regorus, in this process) and by ``OpaEngine`` over OPA's
REST API; the decisions (action, tier, reasons, rules) and the fired rules (what ``gateway check --explain``
shows) must be equal. The OPA side runs twice:

- against tests/opa_rest_server.py, the stand-in (always; it evaluates with regorus too, so this proves the
  REST path: push, query, answer parsing, not OPA's evaluator), and
- against a real OPA when ``GATEWAY_TEST_OPA_URL`` (and ``GATEWAY_TEST_OPA_TOKEN`` if it wants one) is set;
  skipped otherwise. ``make test`` never needs OPA.

    GATEWAY_TEST_OPA_URL=http://127.0.0.1:8181 .venv/bin/pytest -q tests/test_golden_decisions.py
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_policy_corpus import CASES, build_world
from test_policy_opa import REAL_OPA, ROOT, TOKEN, opa_server, roles_data

from gateway.config import GatewayConfig
from gateway.judge.scope import SCOPE_RULE
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.engine import fired_rules
from gateway.policy.opa import OpaEngine
from gateway.types import JSONObject

pytestmark = pytest.mark.anyio

MASS_DELETION = {"added": 0, "changed": 1, "deleted": 4000, "tracked": 6000, "deleted_share": 0.6667}
MASS_DELETION |= {"lines_added": 1, "lines_deleted": 90000}
NO_REAL_OPA = "GATEWAY_TEST_OPA_URL is not set: no real OPA to compare with (docs/opa.md, section 6)"


@dataclass(frozen=True)
class Golden:
    label: str
    document: JSONObject


@dataclass(frozen=True)
class Corpus:
    config: GatewayConfig
    documents: list[Golden]


def variants(base: JSONObject, write: JSONObject, workspace: Path) -> list[Golden]:
    """Documents the corpus calls never produce: who commits, approves or verifies what, unknown names, a
    claim gone stale, acceptance files, upstream tools. Each is a described call (``base``, an operator's
    read, or ``write``, a claimed worker's write) with the principal, tool, task or intent changed by hand."""

    def changed(
        label: str,
        principal: JSONObject | None = None,
        tool: JSONObject | None = None,
        of: JSONObject = base,
        **rest: Any,
    ) -> Golden:
        document = copy.deepcopy(of)
        document["principal"].update(principal or {})
        document["tool"].update(tool or {})
        document.update(rest)
        return Golden(label, document)

    gateway_tool = {"provider": "gateway", "annotations": None, "commit_class": False}
    task = {"id": "T1", "state": "submitted", "workers": ["w1"], "allowed_paths": ["src/**"], "attempt": 1}
    intent = {"id": "I-1", "task_id": "T1", "action": "merge", "state": "approved", "proposed_by": "w1"}
    committer, verifier = {"agent": "c1", "role": "committer"}, {"agent": "v1", "role": "verifier"}
    upstream = {"name": "tickets__get", "provider": "upstream:tickets", "analysed": True, "read_only": True}

    def question(properties: JSONObject) -> JSONObject:
        return {"message": "Which one?", "requestedSchema": {"type": "object", "properties": properties}}

    sampling = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}
    return [
        changed("a role without a role file", {"role": "nosuch"}),
        changed("a tool with no provider", tool={"name": "nosuch", "provider": None}),
        Golden("a document without a tool", {k: v for k, v in copy.deepcopy(base).items() if k != "tool"}),
        changed("a commit-class upstream tool", committer, {"name": "tickets__create", "commit_class": True}),
        changed("intent_commit by a worker, no intent", {"agent": "w1", "role": "worker"}, {"name": "intent_commit"}),
        changed(
            "intent_commit of a proposed intent",
            committer,
            {"name": "intent_commit", **gateway_tool},
            intent={**intent, "state": "proposed"},
        ),
        changed(
            "intent_commit of an approved merge",
            committer,
            {"name": "intent_commit", **gateway_tool},
            intent=intent,
            task=task,
        ),
        changed(
            "intent_commit of an approved merge deleting most of the repository",
            committer,
            {"name": "intent_commit", **gateway_tool},
            intent={**intent, "diff": MASS_DELETION},
            task=task,
        ),
        changed(
            "intent_commit of an approved push",
            committer,
            {"name": "intent_commit", **gateway_tool},
            intent={**intent, "action": "push"},
            task=task,
        ),
        changed("merge_ceremony by the committer", committer, {"name": "merge_ceremony", **gateway_tool}),
        changed(
            "verify_run by a worker of the task",
            {"agent": "w1", "role": "verifier"},
            {"name": "verify_run", **gateway_tool},
            task=task,
        ),
        changed("verify_run by another agent", verifier, {"name": "verify_run", **gateway_tool}, task=task),
        changed(
            "intent_approve by a worker of the task",
            {"agent": "w1", "role": "verifier"},
            {"name": "intent_approve", **gateway_tool},
            task=task,
            intent={**intent, "state": "proposed"},
        ),
        changed(
            "a worker's write after its claim expired",
            of=write,
            context={**write["context"], "time": "2200-01-01T00:00:00+00:00"},
        ),
        changed(
            "a worker's write to an acceptance file",
            of=write,
            task={**write["task"], "acceptance": write["effects"]["creates"] + write["effects"]["writes"]},
        ),
        changed(
            "an undescribed upstream tool",
            tool={"name": "tickets__get", "provider": "upstream:tickets", "analysed": False},
        ),
        changed(
            "a described upstream tool, not read-only",
            tool={"name": "tickets__get", "provider": "upstream:tickets", "analysed": True, "read_only": False},
        ),
        changed(
            "an upstream tool changed since it was pinned",
            tool={
                "name": "tickets__get",
                "provider": "upstream:tickets",
                "analysed": True,
                "read_only": True,
                "pin": {"status": "changed", "digest": "sha256:b", "pinned": "sha256:a", "instructions": "pinned"},
            },
        ),
        changed("context outside the workspace", context={**base["context"], "workspace": str(workspace.parent)}),
        # what an upstream asks of the client during a call (policies/relay.rego)
        changed("an upstream's question", tool=upstream, kind="elicitation", arguments=question({"branch": {}})),
        changed(
            "an upstream's question for a password",
            tool=upstream,
            kind="elicitation",
            arguments=question({"pw": {"type": "string", "title": "Password"}}),
        ),
        changed(
            "an upstream's URL question",
            tool=upstream,
            kind="elicitation",
            arguments={"mode": "url", "message": "Sign in", "url": "https://example.com"},
        ),
        changed("an upstream's sampling request", tool=upstream, kind="sampling", arguments=sampling),
        changed(
            "an upstream's sampling request with the agent's context",
            tool=upstream,
            kind="sampling",
            arguments={**sampling, "includeContext": "allServers"},
        ),
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    """The input document of every corpus case the policy was asked about (a case refused before the
    policy, such as a path outside the workspace, has none), and the variants."""
    world = next(build_world(tmp_path_factory.mktemp("golden"), explain=True))
    config = GatewayConfig.load(world.workspace / "gateway.yaml")
    documents = [
        Golden(f"[{case.group}] {case.label}", world.decisions[id(case)]["input"])
        for case in CASES
        if world.decisions[id(case)]["input"] is not None
    ]
    read = next(g.document for g in documents if g.label.endswith("] fs_read {'path': 'README.md'}"))
    write = next(g.document for g in documents if g.label == "[worker (claimed)] fs_write {'path': 'src/new.py'}")
    yield Corpus(config, documents + variants(read, write, world.workspace))


@pytest.fixture(scope="module", params=["stand-in", "real OPA"])
def opa(request: pytest.FixtureRequest) -> Iterator[str]:
    """The OPA server's URL: the stand-in, then a real OPA when one is named."""
    if request.param == "real OPA":
        if not REAL_OPA:
            pytest.skip(NO_REAL_OPA)
        yield REAL_OPA
        return
    with opa_server() as url:
        yield url


def test_the_corpus_is_the_whole_policy_corpus(corpus: Corpus) -> None:
    assert len(corpus.documents) >= 800, len(corpus.documents)
    kinds = {label.split("]")[0] for label in (g.label for g in corpus.documents)}
    assert {"[worker (claimed)", "[worker (unclaimed)"} <= kinds


def bundle_rules() -> set[str]:
    """Every rule name a module of the bundle can put in a decision."""
    modules = [p for p in (ROOT / "policies").glob("*.rego") if not p.name.endswith("_test.rego")]
    return {name for p in modules for name in re.findall(r'"rule": "([a-z_]+\.[a-z_]+)"', p.read_text())}


def fired_names(decision: JSONObject | list[JSONObject] | None) -> set[str]:
    return {str(rule["rule"]) for rule in decision or []}


async def test_every_rule_of_the_bundle_is_golden(corpus: Corpus) -> None:
    """A rule no golden document fires could decide differently on OPA without a test noticing."""
    embedded = EmbeddedEngine(corpus.config.policy_dir, roles_data(corpus.config))
    fired: set[str] = set()
    for golden in corpus.documents:
        fired |= fired_names(await fired_rules(embedded, golden.document))
        fired |= set((await embedded.decide(golden.document)).rules)
    assert len(bundle_rules()) >= 30
    assert bundle_rules() <= fired, f"rules no golden document fires: {sorted(bundle_rules() - fired)}"


async def test_embedded_and_opa_decide_the_golden_corpus_identically(opa: str, corpus: Corpus) -> None:
    embedded = EmbeddedEngine(corpus.config.policy_dir, roles_data(corpus.config))
    engine = OpaEngine(corpus.config.policy_dir, roles_data(corpus.config), url=opa, token=TOKEN)
    differences = []
    try:
        for golden in corpus.documents:
            ours, theirs = await embedded.decide(golden.document), await engine.decide(golden.document)
            if ours != theirs:
                differences.append(f"{golden.label}\n  embedded {ours}\n  opa      {theirs}")
            fired_ours = await fired_rules(embedded, golden.document)
            fired_theirs = await fired_rules(engine, golden.document)
            if fired_ours != fired_theirs:
                differences.append(f"{golden.label}: fired\n  embedded {fired_ours}\n  opa      {fired_theirs}")
        assert engine.status()["last_error"] is None
    finally:
        await engine.aclose()
    assert not differences, f"{len(differences)} difference(s):\n" + "\n".join(differences[:20])


SCOPES = [
    {"allowed_paths": ["src/**"], "files": ["src/a.py", "docs/b.md"]},
    {"allowed_paths": ["src/*.py", "tests/**"], "files": ["src/a.py", "src/x/b.py", "tests/x/y/test_z.py"]},
    {"allowed_paths": [], "files": ["README.md"]},
    {"allowed_paths": ["**"], "files": [".github/workflows/ci.yml", "a b/c.txt"]},
]


async def test_scope_violations_are_identical(opa: str, corpus: Corpus) -> None:
    """The other rule the gateway queries: a task's changed files outside its allowed paths."""
    embedded = EmbeddedEngine(corpus.config.policy_dir, roles_data(corpus.config))
    engine = OpaEngine(corpus.config.policy_dir, roles_data(corpus.config), url=opa, token=TOKEN)
    try:
        answers = [(await embedded.query(SCOPE_RULE, s), await engine.query(SCOPE_RULE, s)) for s in SCOPES]
    finally:
        await engine.aclose()
    assert answers[0][0] == ["docs/b.md"]
    assert [ours for ours, _ in answers] == [theirs for _, theirs in answers]
