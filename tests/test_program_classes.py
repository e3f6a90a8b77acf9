"""The program families and the policy's program classes: policies/lib/programs.rego is generated from the
families (gateway/effects/shell/program_classes.py), the tiers and paths concerns read their classes from it,
the registry refuses two families claiming one program, and the walk imports no family."""

from __future__ import annotations

import ast

import pytest
from conftest import ROOT

from gateway.effects.shell import program_classes
from gateway.effects.shell.family import PROGRAM_CLASSES, Family
from gateway.effects.shell.registry import FAMILIES, REGISTRY, Registry
from gateway.identity.roles import RoleSet
from gateway.policy.bundle import LiveBundle

SHELL = ROOT / "gateway" / "effects" / "shell"


def test_the_shipped_program_classes_are_the_families_own() -> None:
    shipped = (ROOT / "policies" / "lib" / "programs.rego").read_text()
    assert shipped == program_classes.render(), (
        "policies/lib/programs.rego is stale: .venv/bin/python -m gateway.effects.shell.program_classes "
        "policies/lib/programs.rego"
    )


def test_the_concerns_judge_by_the_generated_classes() -> None:
    bundle = LiveBundle(ROOT / "policies", {"roles": RoleSet.load(ROOT / "roles").as_data()})
    for name in PROGRAM_CLASSES:
        concern = "paths" if name in ("cd_programs", "link_programs") else "tiers"
        found = bundle.evaluate(f"data.gateway.concerns.{concern}.{name}", {})
        assert set(found) == REGISTRY.classes[name], name
    publishing = bundle.evaluate("data.gateway.concerns.tiers.publishing", {})
    assert {k: set(v) for k, v in publishing.items()} == REGISTRY.publishes


def test_two_families_cannot_claim_one_program() -> None:
    rm = REGISTRY.handlers["rm"]
    with pytest.raises(ValueError, match="two families"):
        Registry([*FAMILIES, Family(name="again", handlers={"rm": rm})])
    with pytest.raises(ValueError, match="unknown program classes"):
        Registry([*FAMILIES, Family(name="typo", classes={"read_only": frozenset({"ls"})})])


def test_every_family_is_registered_once_with_a_name_of_its_own() -> None:
    names = [family.name for family in FAMILIES]
    assert len(names) == len(set(names))
    declared = {path.stem for path in SHELL.glob("*.py") if "\nFAMILY = Family(" in path.read_text()}
    assert declared == {"decoders", "files", "git", "interpreters", "network", "packages", "privilege"} | {
        "system",
        "text",
        "wrappers",
    }
    assert len(FAMILIES) == len(declared)


def test_the_walk_knows_no_family() -> None:
    """walker.py and walk/ dispatch through the registry (given to the Describer): they import no family."""
    families = {
        f"gateway.effects.shell.{path.stem}" for path in SHELL.glob("*.py") if "\nFAMILY = Family(" in path.read_text()
    }
    for path in [SHELL / "walker.py", *(SHELL / "walk").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported = {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
                assert not imported & families, f"{path.name} imports {sorted(imported & families)}"


def test_program_names_are_normalised_from_the_families_spellings() -> None:
    assert REGISTRY.program_name("/usr/bin/python3.11") == "python"
    assert REGISTRY.program_name("nodejs") == "node"
    assert REGISTRY.program_name("pip3") == "pip"
    assert REGISTRY.program_name("luajit2.1") == "lua"
    assert REGISTRY.program_name("python-config") == "python-config"
    assert REGISTRY.emits_untrusted(["base64", "-d"]) and REGISTRY.emits_untrusted(["curl", "x"])
    assert not REGISTRY.emits_untrusted(["base64", "f"]) and not REGISTRY.emits_untrusted([])


def test_no_module_of_the_analysis_is_over_500_lines() -> None:
    """One concept per module: a family that grows splits by concern, as git's subcommands do."""
    long = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / "gateway" / "effects").rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > 500
    }
    assert long == {}
