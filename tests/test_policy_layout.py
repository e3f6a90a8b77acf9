"""The policy bundle laid out by concern (policies/<concern>/, policies/lib/): every concern's rules take effect,
a concern decision.rego does not combine is refused, ``gateway policy lint`` on the shipped bundle and on
bad ones, and a state dir holding an older version's flat bundle (a message, ``gateway policy upgrade``)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from real_opa import RealOpa
from test_policy_cli import gateway

from gateway.bootstrap import init_workspace
from gateway.config import GatewayConfig
from gateway.identity.roles import RoleSet
from gateway.policy.bundle import Bundle, BundleError, LiveBundle, bundle_look
from gateway.policy.cases import load_cases
from gateway.policy.lint import flat_layout, lint, policy_sources, rule_ids
from gateway.policy.reload import policy_data
from gateway.policy.testing import run_policy_tests

SHIPPED = ROOT / "policies"
CONCERNS = sorted(p.name for p in SHIPPED.iterdir() if p.is_dir() and p.name not in {"lib", "scope"})
READ = {
    "version": 2,
    "principal": {"agent": "dev-1", "role": "developer"},
    "tool": {"name": "fs_read", "provider": "gateway"},
    "arguments": {"path": "README.md"},
    "effects": {"commands": [], "reads": ["README.md"], "writes": [], "creates": [], "deletes": []},
    "context": {"workspace": "/w"},
}


def added_deny(concern: str) -> str:
    return f"""
# METADATA
# title: Added by a user
# description: >-
#   A rule a user adds to the {concern} concern: it must take effect.
# custom:
#   rule: {concern}.added_by_a_user
deny contains {{"rule": "{concern}.added_by_a_user", "reason": "added"}} if input.arguments.path == "README.md"
"""


def copy_of_shipped(tmp_path: Path) -> Path:
    bundle = tmp_path / "policies"
    shutil.copytree(SHIPPED, bundle)
    return bundle


def roles() -> dict[str, object]:
    return {"roles": RoleSet.load(ROOT / "roles").as_data()}


def test_the_shipped_concerns() -> None:
    assert CONCERNS == ["commit", "duty", "flow", "paths", "relay", "roles", "secrets", "tiers"]
    for concern in CONCERNS:
        assert (SHIPPED / concern / f"{concern}.rego").is_file() and (
            SHIPPED / concern / f"{concern}_test.rego"
        ).is_file()


@pytest.mark.parametrize("concern", CONCERNS)
def test_a_deny_rule_added_to_any_concern_takes_effect(tmp_path: Path, concern: str) -> None:
    """On regorus and on the real OPA: decision.rego combines every concern's deny and findings, whether or
    not the concern has such rules today (tiers and duty had none of one kind)."""
    bundle = copy_of_shipped(tmp_path)
    module = bundle / concern / f"{concern}.rego"
    module.write_text(module.read_text() + added_deny(concern))
    assert lint(bundle) == []
    ours = LiveBundle(bundle, roles()).evaluate("data.gateway.decision", READ)
    assert ours["action"] == "deny" and f"{concern}.added_by_a_user" in ours["rules"], ours
    opa = RealOpa.for_bundle(bundle, roles())
    try:
        assert opa.evaluate("gateway.decision", READ) == ours
    finally:
        opa.close()


def test_a_concern_decision_rego_does_not_combine_is_refused(tmp_path: Path) -> None:
    bundle = copy_of_shipped(tmp_path)
    (bundle / "extra").mkdir()
    (bundle / "extra" / "extra.rego").write_text(
        "package gateway.concerns.extra\n\nimport rego.v1\n" + added_deny("extra")
    )
    with pytest.raises(BundleError, match=r"deny of concern 'extra' reaches nothing: decision.rego does not combine"):
        Bundle(bundle, roles(), bundle_look(bundle, policy_data(roles()))())
    assert [p.kind for p in lint(bundle)] == ["dead_rule"]
    decision = bundle / "decision.rego"
    line = "denials contains denial if some denial in data.gateway.concerns.extra.deny\n"
    decision.write_text(decision.read_text() + "\n" + line)
    assert "extra.added_by_a_user" in LiveBundle(bundle, roles()).evaluate("data.gateway.decision", READ)["rules"]


def test_a_bundle_is_checked_once_per_content_and_an_edit_is_checked_again(tmp_path: Path) -> None:
    """Bundles of the same sources and data skip the checks after the first pass in a process (the suite builds
    thousands); the memo is named by content, so an edited module is checked again (and refused when broken), and
    a LiveBundle that reloads sees the edit even with the file's mtime put back."""
    bundle = copy_of_shipped(tmp_path)
    live = LiveBundle(bundle, roles())
    first = live.current(force=True).revision
    assert Bundle(bundle, roles(), bundle_look(bundle, policy_data(roles()))()).revision == first
    rego = bundle / "tiers" / "tiers.rego"
    text, stat = rego.read_text(), rego.stat()
    rego.write_text(text + "\nx := data.gateway.lib.nowhere(1)\n")  # a call to a function no module defines
    with pytest.raises(BundleError, match=r"undefined function data\.gateway\.lib\.nowhere"):
        Bundle(bundle, roles(), bundle_look(bundle, policy_data(roles()))())
    rego.write_text(text + "\n# an edit\n")
    os.utime(rego, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    edited = live.current(force=True)
    assert edited.revision != first and "# an edit" in dict(edited.sources)["tiers/tiers.rego"]
    assert live.last_error is None


def test_a_rule_outside_the_concerns_is_refused(tmp_path: Path) -> None:
    """An older version's module copied into a bundle laid out by concern (package gateway.tiers) would decide
    nothing: refused, with the reason."""
    bundle = copy_of_shipped(tmp_path)
    (bundle / "tiers" / "mine.rego").write_text("package gateway.tiers\n\nimport rego.v1\n" + added_deny("tiers"))
    with pytest.raises(BundleError, match=r"deny in package gateway.tiers, outside gateway.concerns: nothing combines"):
        Bundle(bundle, roles(), bundle_look(bundle, policy_data(roles()))())


def test_the_shipped_bundle_lints_clean_and_gateway_policy_lint_says_so(tmp_path: Path) -> None:
    assert lint(SHIPPED) == []
    result = gateway(tmp_path, "policy", "lint", str(SHIPPED))
    assert result.returncode == 0 and result.stdout == "", result.stderr
    assert "0 problem(s)" in result.stderr


def test_lint_reports_dead_rules_missing_metadata_and_divergent_builtins(tmp_path: Path) -> None:
    bundle = copy_of_shipped(tmp_path)
    (bundle / "lib" / "extra.rego").write_text(
        'package gateway.lib.extra\n\nimport rego.v1\n\ndeny contains {"rule": "extra.x", "reason": "x"} if input.x\n'
    )
    tiers = bundle / "tiers" / "tiers.rego"
    tiers.write_text(
        tiers.read_text()
        + '\nfindings contains {"tier": 2, "rule": "tiers.bare", "reason": "x"} if lower(input.x) == "a"\n'
        + "\nspaced if regex.match(`a\\sb`, input.x)\n"
        + '\nglobbed if glob.match("**/x", ["/"], input.x)\n'
    )
    found = {(p.file, p.kind) for p in lint(bundle)}
    assert found == {
        ("lib/extra.rego", "dead_rule"),
        ("tiers/tiers.rego", "missing_metadata"),
        ("tiers/tiers.rego", "divergent_builtin"),
    }, found
    messages = " ".join(str(p) for p in lint(bundle))
    assert "lower()" in messages and "`a\\sb`" in messages and "glob.match()" in messages
    result = gateway(tmp_path, "policy", "lint", str(bundle))
    assert result.returncode == 1 and "tiers/tiers.rego" in result.stdout and "dead_rule" in result.stdout


def flatten(shipped: Path, into: Path) -> None:
    """The bundle as the versions before this one laid it out: every module in one directory, concerns in
    packages gateway.<concern>, decision.rego naming each concern's sets in one hand-kept union."""
    into.mkdir()
    for path in shipped.rglob("*.rego"):
        text = re.sub(r"gateway\.(concerns|lib)\.", "gateway.", path.read_text())
        (into / path.name).write_text(text)
    decision = (into / "decision.rego").read_text()
    decision = re.sub(r"(denials|findings) contains \w+ if some \w+ in data\.gateway\.(\w+)\.\w+\n\n", "", decision)
    union = {kind: " | ".join(f"data.gateway.{c}.{kind}" for c in ("roles", "paths", "commit")) for kind in ("deny",)}
    decision += (
        f"\ndenials := {union['deny']}\n\nfindings := data.gateway.tiers.findings | data.gateway.roles.findings\n"
    )
    (into / "decision.rego").write_text(decision)
    tiers = into / "tiers.rego"
    tiers.write_text(tiers.read_text().replace("# METADATA", "#") + added_deny("tiers").replace("# METADATA", "#"))


def test_a_state_dir_with_the_flat_layout_is_told_and_upgraded(tmp_path: Path) -> None:
    """An older version's bundle still decides as it did; lint and the gateway's log say how to upgrade, and
    ``gateway policy upgrade`` puts this version's bundle in its place, the old one kept, its own rule ids
    listed."""
    repo = tmp_path / "repo"
    config = init_workspace(repo, state_dir=tmp_path / "state")
    shutil.rmtree(config.policy_dir)
    flatten(SHIPPED, config.policy_dir)
    assert flat_layout(config.policy_dir) and "gateway policy upgrade" in (flat_layout(config.policy_dir) or "")
    old = LiveBundle(config.policy_dir, roles()).evaluate("data.gateway.decision", READ)
    assert old["action"] == "allow", "the flat bundle decides; the deny it has in tiers.rego is ignored, as it was"
    before = gateway(repo, "check", "--role", "developer", "--tool", "fs_read", "--args", '{"path": "README.md"}')
    assert json.loads(before.stdout)["action"] == "allow" and "gateway policy upgrade" in before.stderr, before.stderr
    linted = gateway(repo, "policy", "lint")
    assert linted.returncode == 1 and "flat layout of an older version" in linted.stderr
    upgraded = gateway(repo, "policy", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    answer = json.loads(upgraded.stdout)
    assert answer["rules_only_in_the_old_bundle"] == ["tiers.added_by_a_user"]
    assert Path(answer["old_bundle"]).is_dir() and (Path(answer["old_bundle"]) / "tiers.rego").is_file()
    assert flat_layout(config.policy_dir) is None and lint(config.policy_dir) == []
    checked = gateway(repo, "check", "--role", "developer", "--tool", "fs_read", "--args", '{"path": "README.md"}')
    assert json.loads(checked.stdout or "{}").get("action") == "allow", (checked.stdout, checked.stderr)
    again = gateway(repo, "policy", "upgrade")
    assert again.returncode != 0 and "already laid out by concern" in again.stderr
    assert GatewayConfig.load(repo / "gateway.yaml").policy_dir == config.policy_dir


def test_rule_ids_the_gateway_names_are_the_bundles() -> None:
    """Rule ids are the bundle's METADATA (custom.rule, custom.rules); every id a rule can give is in it, and
    every id the gateway's own code names as a string is one of them."""
    ids = rule_ids(policy_sources(SHIPPED))
    literal = {i for _, text in policy_sources(SHIPPED) for i in re.findall(r'"rule": "([a-z_]+\.[a-z_]+)"', text)}
    assert literal <= ids and len(ids) >= 45
    concern = "|".join(CONCERNS)
    named = set()
    for path in (ROOT / "gateway").rglob("*.py"):
        named |= set(re.findall(rf"\"((?:{concern})\.[a-z]+_[a-z_]+)\"", path.read_text()))
    assert named and named <= ids, sorted(named - ids)


def test_every_concern_has_cases_and_they_hold_on_regorus_and_opa() -> None:
    """``gateway policy test`` runs them beside the unit tests (regorus); the real OPA decides them alike."""
    cases = load_cases(SHIPPED)
    assert {case.concern for case in cases} == set(CONCERNS)
    results = [r for r in run_policy_tests(SHIPPED, roles()) if r.package.endswith("cases.yaml")]
    assert len(results) == len(cases) and all(r.status == "pass" for r in results), [
        r for r in results if r.status != "pass"
    ]
    opa = RealOpa.for_bundle(SHIPPED, roles())
    try:
        problems = {case.name: case.problem(opa.evaluate("gateway.decision", case.document)) for case in cases}
    finally:
        opa.close()
    assert not any(problems.values()), problems


def test_a_case_that_does_not_hold_fails_gateway_policy_test(tmp_path: Path) -> None:
    bundle = copy_of_shipped(tmp_path)
    cases = bundle / "tiers" / "cases.yaml"
    cases.write_text(
        cases.read_text().replace("expect: {action: allow, tier: 1, rules: [tiers.read]}", "expect: {action: deny}")
    )
    failed = [r for r in run_policy_tests(bundle, roles()) if r.status != "pass"]
    assert [(r.package, r.name) for r in failed] == [("tiers/cases.yaml", "reading a file is tier 1")]
    assert failed[0].message == "action 'allow', not 'deny'"


def test_an_install_that_is_not_a_checkout_gets_every_directory_of_the_bundle() -> None:
    """pyproject's data-files copy a directory's files into one place each: every bundle directory is listed."""
    import tomllib

    data_files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    directories = {p.parent for p in SHIPPED.rglob("*") if p.is_file()}
    listed = {
        Path(target).relative_to("share/mcp-policy-gateway"): patterns
        for target, patterns in data_files.items()
        if target.startswith("share/mcp-policy-gateway/policies")
    }
    for directory in directories:
        patterns = listed.get(directory.relative_to(ROOT), [])
        files = {p for pattern in patterns for p in ROOT.glob(pattern)}
        assert files == {p for p in directory.iterdir() if p.is_file()}, directory
