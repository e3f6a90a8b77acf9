"""Golden decisions: the embedded engine (regorus) and the real Open Policy Agent decide every input alike.

The inputs are policy input documents built by the gateway's own stages (what ``gateway check --explain``
shows): every case of tests/policy_corpus.yaml, a few documents changed by hand to reach the rules no call
reaches (separation of duty, the commit rules, an unknown role or tool), and the generated corpus of
tests/golden_corpus.py - thousands of documents: every tool of every role, path edge cases (``**/`` at the
root, names that are not valid globs, dot-dirs, Unicode look-alikes, whitespace), shell commands, Claude Code
hook events, upstream calls pinned and not, task scopes and acceptance files, commit intents with their
merge's diff. All are described, never decided, by one gateway in one workspace. Each is decided, and every
rule it fires listed, in one evaluation per engine (``[data.gateway.decision, data.gateway.fired]``), by

- regorus, as the embedded engine loads the bundle, in this process;
- OPA v1.20.2's own evaluator (tests/real_opa.py) with strict builtin errors, as the gateway asks an OPA
  server for them (gateway/policy/opa.py) - an error is a difference - in a process of its own that decides
  while regorus does;
- the same evaluator with lenient builtin errors (what an OPA server answers a client that does not ask), in
  a third process;

and the answers must be equal: action, tier, reasons, rules, and the fired denials and findings. The scope
check (``data.gateway.scope.violations``) is compared on every engine and against the gateway's own reading
of a task's globs (gateway/tasks/drift.py ``matches``). Each comparison prints how many inputs it decided
and how many differed (``-s`` shows it).

``make test`` decides every input (about 4,500: the policy corpus, the hand-made ones, the whole generated
corpus) on regorus and on strict OPA. Lenient OPA decides every LENIENT_SAMPLED-th of them: it answers
otherwise than strict OPA only where a builtin fails, and strict OPA fails on any such input. Each engine
spends about 4 ms of CPU per input, about half of it on what the bundle works out for every decision
whatever the input (the protected-path screens of policies/paths/: 2 ms for a ``git_status``); OPA runs
with ``GOGC=1000``, without which Go's collector took a third more. ``GATEWAY_TEST_GOLDEN=full`` adds
lenient OPA on every input and a corpus about four times bigger (about 15,000 inputs), minutes of CPU, for a
change to the policies or to the generator.

The OPA engine's REST path (push, query, answer parsing) is compared too: ``OpaEngine`` against
tests/opa_rest_server.py (OPA's REST API in front of the same evaluator), and against an OPA server of yours
when ``GATEWAY_TEST_OPA_URL`` (and ``GATEWAY_TEST_OPA_TOKEN`` if it wants one) is set; skipped otherwise.

    .venv/bin/pytest -q -s tests/test_golden_decisions.py
    GATEWAY_TEST_GOLDEN=full .venv/bin/pytest -q -s tests/test_golden_decisions.py
    GATEWAY_TEST_OPA_URL=http://127.0.0.1:8181 .venv/bin/pytest -q tests/test_golden_decisions.py
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from golden_corpus import Corpus, Golden, build_corpus
from real_opa import OpaProcess, RealOpa
from test_policy_opa import REAL_OPA, ROOT, TOKEN, opa_server, roles_data

from gateway.config import GatewayConfig
from gateway.judge.scope import SCOPE_RULE
from gateway.policy.bundle import engine_message
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.engine import fired_rules
from gateway.policy.opa import OpaEngine
from gateway.tasks.drift import matches
from gateway.types import JSONObject

# Deciding thousands of documents on three engines takes minutes of wall time on a loaded two-core machine.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

FULL = os.environ.get("GATEWAY_TEST_GOLDEN") == "full"
LENIENT_SAMPLED = 16  # lenient OPA is asked every LENIENT_SAMPLED-th input (every one with FULL)
REST_SAMPLED = 16  # the OPA engine's REST path decides every REST_SAMPLED-th case of the policy corpus

MASS_DELETION = {"added": 0, "changed": 1, "deleted": 4000, "tracked": 6000, "deleted_share": 0.6667}
MASS_DELETION |= {"lines_added": 1, "lines_deleted": 90000}
NO_REAL_OPA = "GATEWAY_TEST_OPA_URL is not set: no real OPA to compare with (docs/opa.md, section 7)"


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
        return Golden("changed by hand", label, document)

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
        Golden("changed by hand", "a document without a tool", {k: v for k, v in base.items() if k != "tool"}),
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
        changed(
            "a message to other agents after untrusted content",
            tool={"name": "task_report", **gateway_tool},
            flow=flow("untrusted", "upstream:web web__fetch_page"),
        ),
        changed(
            "egress after a confidential read",
            effects={**base["effects"], "network": [{"host": "paste.example", "via": "curl"}]},
            flow=flow("confidential", "touches secrets or credentials: .env"),
        ),
        # what an upstream asks of the client during a call (policies/relay/relay.rego)
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


def flow(label: str, what: str) -> JSONObject:
    """input.flow of a session one source raised ``label`` in (gateway/labels.py)."""
    source = {"label": label, "what": what, "tool": "x", "call_id": "c1"}
    return {
        "session": "jti:j",
        "integrity": "untrusted" if label == "untrusted" else "trusted",
        "confidentiality": "confidential" if label == "confidential" else "public",
        "untrusted": [source] if label == "untrusted" else [],
        "confidential": [source] if label == "confidential" else [],
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("generated"))


@pytest.fixture(scope="module")
def corpus(generated: Corpus) -> Corpus:
    """The input document of every case of the policy corpus (a case refused before the policy, such as a path
    outside the workspace, has none), described in the generated corpus's world, and the variants."""
    read = next(g.document for g in generated.cases if g.label.endswith("] fs_read {'path': 'README.md'}"))
    write = next(g.document for g in generated.cases if g.label == "[worker (claimed)] fs_write {'path': 'src/new.py'}")
    return Corpus(generated.config, generated.cases + variants(read, write, generated.config.workspace))


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
    modules = [p for p in (ROOT / "policies").rglob("*.rego") if not p.name.endswith("_test.rego")]
    return {name for p in modules for name in re.findall(r'"rule": "([a-z_]+\.[a-z_]+)"', p.read_text())}


def test_every_rule_of_the_bundle_is_golden(answers: Answers) -> None:
    """A rule no golden document fires could decide differently on OPA without a test noticing."""
    fired = {rule for answer in answers.embedded if "decision" in answer for rule in answer["decision"]["rules"]}
    for answer in answers.embedded:
        fired |= {f["rule"] for key in ("denials", "findings") for f in answer.get("fired", {}).get(key, [])}
    assert len(bundle_rules()) >= 30
    assert bundle_rules() <= fired, f"rules no golden document fires: {sorted(bundle_rules() - fired)}"


async def test_embedded_and_opa_decide_the_golden_corpus_identically(opa: str, corpus: Corpus) -> None:
    """Through the OPA engine's REST path (push, query, answer parsing): every REST_SAMPLED-th case of the
    policy corpus and every document changed by hand. Every document's decision is compared on OPA's
    evaluator below."""
    embedded = EmbeddedEngine(corpus.config.policy_dir, roles_data(corpus.config))
    engine = OpaEngine(corpus.config.policy_dir, roles_data(corpus.config), url=opa, token=TOKEN)
    differences = []
    sample = [g for i, g in enumerate(corpus.documents) if i % REST_SAMPLED == 0 or g.group == "changed by hand"]
    try:
        for golden in sample:
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


# --- every input on regorus and on the real OPA, with strict and lenient builtin errors --------------------

# The decision and every rule fired, in one evaluation: the decision reuses what fired computes.
ANSWER = "answer := [data.gateway.decision, data.gateway.fired]"


def comparable(bindings: list[JSONObject]) -> JSONObject:
    """An engine's answer, with what a set leaves in no order (the fired denials and findings) sorted."""
    if len(bindings) != 1:
        return {"error": f"{len(bindings)} results"}
    decision, fired = bindings[0]["answer"]
    canonical = {key: sorted(values, key=lambda v: json.dumps(v, sort_keys=True)) for key, values in fired.items()}
    return {"decision": decision, "fired": canonical}


def embedded_answers(config: GatewayConfig, lines: list[str]) -> list[JSONObject]:
    """regorus, as the embedded engine loads the bundle; an error is an answer of its own."""
    engine = EmbeddedEngine(config.policy_dir, roles_data(config)).live.current().engine()
    answers = []
    for line in lines:
        engine.set_input_json(line)
        try:
            rows = json.loads(engine.eval_query_as_json(ANSWER))["result"]
        except RuntimeError as exc:
            answers.append({"error": engine_message(exc)})
            continue
        answers.append(comparable([row["bindings"] for row in rows]))
    return answers


def opa_answers(process: OpaProcess) -> list[JSONObject]:
    return [{"error": row["error"]} if "error" in row else comparable(row["result"]) for row in process.answers()]


@dataclass(frozen=True)
class Answers:
    documents: list[Golden]
    embedded: list[JSONObject]
    strict: list[JSONObject]
    lenient: list[JSONObject]  # of every lenient_every-th document
    lenient_every: int = 1


def decide_everywhere(config: GatewayConfig, documents: list[Golden], scratch: Path, lenient_every: int = 1) -> Answers:
    """The three at once: each OPA in a process of its own (tests/real_opa.py ``OpaProcess``: one Go runtime
    per process, and a garbage collector tuned for a batch) decides while regorus does here. Each document is
    encoded once, for all three."""
    data = scratch / "data.json"
    data.write_text(json.dumps(roles_data(config)), encoding="utf-8")
    lines = [json.dumps(g.document) for g in documents]
    strict = OpaProcess("strict", config.policy_dir, data, ANSWER, lines)
    lenient = OpaProcess("lenient", config.policy_dir, data, ANSWER, lines[::lenient_every])
    embedded = embedded_answers(config, lines)
    return Answers(documents, embedded, opa_answers(strict), opa_answers(lenient), lenient_every)


@pytest.fixture(scope="module")
def answers(corpus: Corpus, generated: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Answers:
    """Every document of the policy corpus, the hand-made variants and the generated corpus, decided by the
    bundle the generated corpus's workspace holds (the shipped one, with the same roles)."""
    scratch = tmp_path_factory.mktemp("answers")
    return decide_everywhere(
        generated.config, corpus.documents + generated.documents, scratch, 1 if FULL else LENIENT_SAMPLED
    )


def differences(answers: Answers, theirs: list[JSONObject], what: str, every: int = 1) -> list[str]:
    """Each input decided differently (or failing on either engine), and a count per group printed;
    ``theirs`` answers every ``every``-th input."""
    found = []
    groups: Counter[str] = Counter()
    decided = zip(answers.documents[::every], answers.embedded[::every], theirs, strict=True)
    for golden, ours, other in decided:
        if ours != other or "error" in ours:
            groups[golden.group] += 1
            found.append(f"[{golden.group}] {golden.label}\n  regorus {ours}\n  {what} {other}")
    print(f"\n{what}: {len(theirs)} inputs, {len(found)} differences {dict(groups) or ''}")
    return found


def test_the_generated_corpus_has_thousands_of_inputs_of_every_kind(generated: Corpus) -> None:
    groups = Counter(g.group for g in generated.documents)
    print(f"\ngenerated: {len(generated.documents)} inputs, {generated.refused} calls refused before the policy")
    assert len(generated.documents) >= 3000, groups
    kinds = {group.split(":")[0] for group in groups}
    assert {"every tool of every role", "paths", "shell", "hook", "upstream", "intents"} <= kinds, kinds
    assert groups["every tool of every role"] >= 300 and groups["shell"] >= 500
    roles = {g.document["principal"]["role"] for g in generated.documents}
    assert roles >= {p.stem for p in generated.config.roles.glob("*.yaml")}, roles
    assert generated.refused < len(generated.documents) / 10, "most generated calls must reach the policy"


def test_the_real_opa_decides_every_input_as_the_embedded_engine(answers: Answers) -> None:
    """With strict builtin errors (as the gateway asks an OPA server): no input fails on either engine, and
    every decision and fired rule is the same."""
    found = differences(answers, answers.strict, "OPA (strict builtin errors)")
    assert len(answers.documents) >= 4000
    assert not found, f"{len(found)} difference(s):\n" + "\n".join(found[:15])


def test_an_opa_with_lenient_builtin_errors_decides_every_input_alike(answers: Answers) -> None:
    """What an OPA server answers a client that does not ask for strict errors: the same, because no builtin
    of the bundle fails on any input (a failing one would be undefined there, not an error)."""
    found = differences(answers, answers.lenient, "OPA (lenient builtin errors)", answers.lenient_every)
    assert not found, f"{len(found)} difference(s):\n" + "\n".join(found[:15])


def test_scope_checks_read_task_globs_as_the_gateway_does(generated: Corpus) -> None:
    """``data.gateway.scope.violations`` on regorus and on OPA, and gateway/tasks/drift.py ``matches`` (what
    the gateway reads a task's globs as: frozen paths, acceptance files in the sandbox) agree on every
    allowed-path pattern a manifest accepts against the edge paths: `**/` is zero or more directories."""
    embedded = EmbeddedEngine(generated.config.policy_dir, roles_data(generated.config)).live
    opa = RealOpa.for_bundle(generated.config.policy_dir, roles_data(generated.config))
    found, checked = [], 0
    for scope in [*SCOPES, *generated.scopes]:
        python = sorted(f for f in scope["files"] if not any(matches(p, f) for p in scope["allowed_paths"]))
        ours = embedded.evaluate(f"data.{SCOPE_RULE}", scope)
        theirs = opa.evaluate(SCOPE_RULE, scope)
        checked += len(scope["files"])
        if not ours == theirs == python:
            found.append(
                f"{scope['allowed_paths']}: only regorus {set(ours) - set(theirs)}, only OPA "
                f"{set(theirs) - set(ours)}, python {set(python) ^ set(ours)}"
            )
    print(f"\nscope: {len(generated.scopes) + len(SCOPES)} checks of {checked} files, {len(found)} differences")
    assert len(generated.scopes) >= 20
    assert not found, "\n".join(found[:10])


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.skipif(not FULL, reason="minutes of CPU: GATEWAY_TEST_GOLDEN=full runs it")
def test_a_larger_generated_corpus_decides_alike(tmp_path: Path) -> None:
    """Every look-alike of every protected path and secret pattern, for reads, writes and deletes by every
    kind of writer: the same comparison over about four times as many inputs."""
    large = build_corpus(tmp_path / "large", size="large")
    answers = decide_everywhere(large.config, large.documents, tmp_path)
    assert len(large.documents) >= 12000, len(large.documents)
    found = differences(answers, answers.strict, "OPA (strict builtin errors)")
    found += differences(answers, answers.lenient, "OPA (lenient builtin errors)")
    assert not found, f"{len(found)} difference(s):\n" + "\n".join(found[:15])
