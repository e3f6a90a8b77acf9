"""The program families, collected in one list: the walker asks this registry which handler describes a
program, which programs fetch or decode, raise privileges, read shell text or run what it does not unwrap.

A family is added by writing its module (ending with ``FAMILY = Family(...)``, see family.py) and listing it
in ``FAMILIES``; two families claiming one program's handler (or one spelling of a name) is an error at import.

    REGISTRY.handlers["rm"]                          # files' rm handler
    REGISTRY.program_name("/usr/bin/python3.11")     # "python"
    REGISTRY.emits_untrusted(["base64", "-d"])       # True: its output is decoded bytes
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from gateway.effects.shell import (
    decoders,
    files,
    git,
    interpreters,
    network,
    packages,
    privilege,
    system,
    text,
    wrappers,
)
from gateway.effects.shell.call import Handler
from gateway.effects.shell.family import PROGRAM_CLASSES, Decodes, EnvCheck, Family
from gateway.effects.shell.words import Word

__all__ = ["FAMILIES", "REGISTRY", "Registry"]

V = TypeVar("V")

FAMILIES: list[Family] = [
    files.FAMILY,
    text.FAMILY,
    decoders.FAMILY,
    interpreters.FAMILY,
    git.FAMILY,
    network.FAMILY,
    packages.FAMILY,
    privilege.FAMILY,
    wrappers.FAMILY,
    system.FAMILY,
]


def _merged(families: Sequence[Family], what: str, pick: Callable[[Family], Mapping[str, V]]) -> dict[str, V]:
    """One mapping from every family's ``pick`` mapping; a key two families declare is an error."""
    merged: dict[str, V] = {}
    for family in families:
        part = pick(family)
        clash = merged.keys() & part.keys()
        if clash:
            raise ValueError(f"{what} declared by two families ({family.name} and another): {sorted(clash)}")
        merged.update(part)
    return merged


def _union(families: Sequence[Family], pick: Callable[[Family], frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*(pick(family) for family in families))


class Registry:
    """What the families know, merged for the walk (built once, at import)."""

    def __init__(self, families: Sequence[Family]) -> None:
        self.families = tuple(families)
        self.handlers: dict[str, Handler] = _merged(families, "handlers of programs", lambda f: f.handlers)
        self.decoders: dict[str, Decodes] = _merged(families, "decoders", lambda f: f.decoders)
        self.renamed: dict[str, str] = _merged(families, "program spellings", lambda f: f.renamed)
        self.publishes: dict[str, frozenset[str]] = _merged(families, "publishing subcommands", lambda f: f.publishes)
        self.fetchers = _union(families, lambda f: f.fetchers)
        self.shells = _union(families, lambda f: f.shells)
        self.privileged = _union(families, lambda f: f.privileged)
        self.opaque_runners = _union(families, lambda f: f.opaque_runners)
        self.guarded = _union(families, lambda f: f.guarded) | self.handlers.keys()
        self.env_checks: tuple[EnvCheck, ...] = tuple(check for family in families for check in family.env_checks)
        versioned = _union(families, lambda f: f.versioned)
        if not self.renamed.keys() <= versioned:
            strays = sorted(self.renamed.keys() - versioned)
            raise ValueError(f"renamed spellings that are not versioned names: {strays}")
        alternatives = "|".join(re.escape(name) for name in sorted(versioned))
        self._versioned = re.compile(rf"^({alternatives})(\d+(\.\d+)*)?$")
        self.classes: dict[str, frozenset[str]] = {}
        for family in families:
            unknown = family.classes.keys() - PROGRAM_CLASSES.keys()
            if unknown:
                raise ValueError(f"family {family.name} declares unknown program classes {sorted(unknown)}")
            for name, programs in family.classes.items():
                self.classes[name] = self.classes.get(name, frozenset()) | programs

    def program_name(self, value: str) -> str:
        """The program a command word runs, normalised: ``/usr/bin/python3.11`` -> ``python``, ``nodejs`` ->
        ``node``."""
        base = value.rstrip("/").rsplit("/", 1)[-1]
        match = self._versioned.match(base)
        if match:
            return self.renamed.get(match.group(1), match.group(1))
        return base

    def emits_untrusted(self, argv: list[str]) -> bool:
        """Does this command print downloaded or decoded bytes (which must not reach an interpreter)?"""
        if not argv:
            return False
        name = self.program_name(argv[0])
        if name in self.fetchers:
            return True
        decodes = self.decoders.get(name)
        return decodes is not None and decodes(argv[1:])

    def env_doubt(self, name: str, value: Word) -> str | None:
        """Why ``name=value`` changes what a family's programs run or where they write, or None."""
        for check in self.env_checks:
            doubt = check(name, value)
            if doubt:
                return doubt
        return None


REGISTRY = Registry(FAMILIES)
