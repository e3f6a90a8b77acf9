"""The policy bundle's layout, read from its sources: concerns, their rules and METADATA; ``gateway policy lint``.

A concern is a package under ``gateway.concerns`` (a directory of its own: policies/<concern>/) whose
``deny`` and ``findings`` sets decision.rego combines, each by name. Helpers shared by concerns live under
``gateway.lib``. Every ``deny`` and ``findings`` definition carries a ``# METADATA`` block with a title, a
description and ``custom.rule`` (its rule id; ``custom.rules`` when the id is computed) and, for a finding,
``custom.tier``.

``layout_problems`` is what makes a bundle refused (gateway/policy/bundle.py, gateway/policy/opa.py): a deny
or findings rule outside every concern, or of a concern decision.rego does not combine, would decide nothing.
``lint`` reports those (dead rules) and more: rules without METADATA, and calls of builtins that decide
differently on regorus and on OPA (docs/opa.md, "Portable Rego") outside policies/lib/ unless the line, or the
one above it, says ``# portable: <why>``.

    problems = lint(Path("policies"))           # [LintProblem(file, line, kind, message), ...]
    ids = rule_ids(policy_sources(Path("policies")))   # every rule id the METADATA names
    flat_layout(Path("policies"))               # the message for a bundle laid out by an older version, or None
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CONCERNS",
    "LintProblem",
    "flat_layout",
    "layout_problems",
    "lint",
    "metadata_blocks",
    "policy_sources",
    "rule_ids",
]

CONCERNS = "gateway.concerns"
PACKAGE = re.compile(r"^package\s+([A-Za-z0-9_.]+)", re.MULTILINE)
RULE_HEAD = re.compile(r"^(deny|findings)\b")
LITERAL_ID = re.compile(r'"rule":\s*"([a-z_]+\.[a-z_]+)"')
LITERAL_TIER = re.compile(r'"tier":\s*(\d+)')
# builtins whose answers differ between regorus and OPA v1.20.2 (measured: docs/opa.md, "Portable Rego")
DIVERGENT_CALLS = {
    "glob.match": "`**/` is zero directories in regorus and at least one in OPA; malformed classes and "
    "non-ASCII text in classes differ",
    "lower": "U+0130 lowers to 'i' in OPA, to 'i' and a combining dot in regorus (use portable.lowered)",
    "upper": "Unicode case mapping differs between Go and Rust",
}
DIVERGENT_CLASS = re.compile(r"(?<!\\)\\[bBsSwWdD]")
WAIVER = "# portable:"
COMBINE = {"deny": "denials contains denial if some denial", "findings": "findings contains finding if some finding"}


@dataclass(frozen=True)
class LintProblem:
    file: str
    line: int
    kind: str  # dead_rule | missing_metadata | divergent_builtin
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}: {self.message}"


@dataclass(frozen=True)
class RuleDefinition:
    """One ``deny`` or ``findings`` definition: where it is and the METADATA above it (None without)."""

    file: str
    line: int
    package: str
    name: str
    head: str
    metadata: dict[str, Any] | None


def policy_sources(directory: Path) -> list[tuple[str, str]]:
    """The bundle's policy modules (not its unit tests), as (path relative to the bundle, text)."""
    files = sorted(p for p in directory.rglob("*.rego") if not p.name.endswith("_test.rego"))
    return [(p.relative_to(directory).as_posix(), p.read_text(encoding="utf-8")) for p in files]


def package_of(text: str) -> str:
    found = PACKAGE.search(text)
    return found.group(1) if found else ""


def metadata_blocks(name: str, text: str, parse: bool = True) -> list[RuleDefinition]:
    """Every ``deny``/``findings`` definition of a module, with the ``# METADATA`` block right above it (not
    parsed without ``parse``: a bundle's load only needs where the rules are, and YAML is most of its cost)."""
    lines = text.splitlines()
    package = package_of(text)
    found = []
    for number, line in enumerate(lines):
        head = RULE_HEAD.match(line)
        if not head:
            continue
        above = number
        while above > 0 and lines[above - 1].startswith("#"):
            above -= 1
        block = lines[above:number]
        metadata = None
        if parse and WAIVER not in "".join(block[:1]) and "# METADATA" in block:
            start = block.index("# METADATA")
            import yaml  # here: a decision worker loads this module for layout_problems, which never parses

            from gateway.yaml_text import safe_load

            try:
                loaded = safe_load("\n".join(b[2:] if b.startswith("# ") else b[1:] for b in block[start + 1 :]))
            except yaml.YAMLError:
                loaded = None
            metadata = loaded if isinstance(loaded, dict) else {}
        found.append(RuleDefinition(name, number + 1, package, head.group(1), line, metadata))
    return found


def concern_of(package: str) -> str | None:
    prefix = CONCERNS + "."
    return package[len(prefix) :].split(".")[0] if package.startswith(prefix) else None


def combined(sources: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """(concern, set) pairs decision.rego (package ``gateway``) names: ``data.gateway.concerns.X.deny``."""
    pattern = re.compile(r"data\.gateway\.concerns\.([a-z_][a-z0-9_]*)\.(deny|findings)\b")
    return {pair for _, text in sources if package_of(text) == "gateway" for pair in pattern.findall(text)}


def unreached_rules(sources: list[tuple[str, str]]) -> list[LintProblem]:
    """``deny`` and ``findings`` rules nothing combines: outside every concern, or of a concern decision.rego
    does not name."""
    names = combined(sources)
    problems = []
    for name, text in sources:
        package = package_of(text)
        concern = concern_of(package)
        for rule in metadata_blocks(name, text, parse=False) if package != "gateway" else []:  # decision.rego combines
            if concern is None:
                message = f"{rule.name} in package {package}, outside {CONCERNS}: nothing combines it"
            elif (concern, rule.name) not in names:
                message = (
                    f"{rule.name} of concern {concern!r} reaches nothing: decision.rego does not combine it "
                    f"(add `{COMBINE[rule.name]} in data.gateway.concerns.{concern}.{rule.name}`)"
                )
            else:
                continue
            problems.append(LintProblem(name, rule.line, "dead_rule", message))
    return problems


def layout_problems(sources: list[tuple[str, str]]) -> list[LintProblem]:
    """What makes a bundle laid out by concern refused: a deny or findings rule that would decide nothing. A
    bundle of an older version's flat layout (no concern package) is not refused: it decides as it did."""
    laid_out = any(concern_of(package_of(text)) for _, text in sources)
    return unreached_rules(sources) if laid_out else []


def rule_ids(sources: list[tuple[str, str]]) -> set[str]:
    """Every rule id the bundle's METADATA names (``custom.rule`` and ``custom.rules``)."""
    ids: set[str] = set()
    for name, text in sources:
        for rule in metadata_blocks(name, text):
            custom = (rule.metadata or {}).get("custom") or {}
            ids |= {custom["rule"]} if isinstance(custom.get("rule"), str) else set()
            ids |= {r for r in custom.get("rules") or [] if isinstance(r, str)}
    return ids


def metadata_problems(rule: RuleDefinition) -> list[str]:
    if rule.metadata is None:
        return ["no # METADATA block above it"]
    missing = [key for key in ("title", "description") if not isinstance(rule.metadata.get(key), str)]
    custom = rule.metadata.get("custom") or {}
    literal = LITERAL_ID.search(rule.head)
    if literal and custom.get("rule") != literal.group(1):
        missing.append(f"custom.rule: {literal.group(1)}")
    if not literal and not custom.get("rules"):
        missing.append("custom.rules (the ids this definition may give)")
    tier = LITERAL_TIER.search(rule.head)
    if rule.name == "findings" and (custom.get("tier") is None or (tier and custom.get("tier") != int(tier.group(1)))):
        missing.append(f"custom.tier: {tier.group(1) if tier else '<the tier>'}")
    return [f"METADATA lacks {', '.join(missing)}"] if missing else []


def divergent_builtins(name: str, text: str) -> list[LintProblem]:
    """Calls of builtins that decide differently on regorus and OPA, and regex classes that do."""
    if name.startswith("lib/"):
        return []  # the portable helpers are where such calls are made safe (lib/portable.rego)
    lines = text.splitlines()
    problems = []
    for number, line in enumerate(lines):
        code = line.split("#", 1)[0] if not re.search(r'["`][^"`]*#', line) else line
        waived = WAIVER in line or (number > 0 and WAIVER in lines[number - 1])
        if waived or line.lstrip().startswith("#"):
            continue
        for builtin, why in DIVERGENT_CALLS.items():
            if re.search(rf"(?<![\w.]){re.escape(builtin)}\(", code):
                problems.append(LintProblem(name, number + 1, "divergent_builtin", f"{builtin}(): {why}"))
        for literal in re.findall(r"`[^`]*`|\"(?:[^\"\\]|\\.)*\"", code):
            if DIVERGENT_CLASS.search(literal.replace("\\\\", "")):
                why = "regex \\b \\s \\w \\d are Unicode-aware in regorus and ASCII in OPA: write the class out"
                problems.append(LintProblem(name, number + 1, "divergent_builtin", f"{literal}: {why}"))
    return problems


def lint(directory: Path) -> list[LintProblem]:
    """Dead rules, missing METADATA, a concern not combined, builtins that differ between engines."""
    sources = policy_sources(directory)
    problems = unreached_rules(sources)
    for name, text in sources:
        if concern_of(package_of(text)) is not None:
            rules = metadata_blocks(name, text)
            problems += [LintProblem(name, r.line, "missing_metadata", m) for r in rules for m in metadata_problems(r)]
        problems += divergent_builtins(name, text)
    return sorted(problems, key=lambda p: (p.file, p.line, p.kind))


def flat_layout(directory: Path) -> str | None:
    """Why a bundle is laid out as an older version laid it out (every module in one directory, concerns in
    packages gateway.<concern>, combined by a hand-kept list), or None. It still decides as it did."""
    sources = policy_sources(directory)
    if any(concern_of(package_of(text)) for _, text in sources):
        return None
    old = sorted(n for n, text in sources if "/" not in n and re.search(r"^(deny|findings)\b", text, re.MULTILINE))
    if not old:
        return None
    return (
        f"the policy bundle {directory} has the flat layout of an older version ({', '.join(old)}): it still "
        "decides as it did, but a deny rule added to a module its decision.rego does not list is ignored. "
        "Run `gateway policy upgrade` to put this version's bundle in its place (the old one is kept beside it)."
    )
