"""The policy's program classes, generated from the program families: policies/lib/programs.rego is what
``render`` returns, so the lists the policy judges commands by (read-only programs, dangerous ones, package
managers' configuration, publishing subcommands, ...) are the families' own. tests/test_program_classes.py
fails when the shipped file and the families disagree; regenerate it with

    .venv/bin/python -m gateway.effects.shell.program_classes policies/lib/programs.rego
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from gateway.effects.shell.family import PROGRAM_CLASSES
from gateway.effects.shell.registry import REGISTRY, Registry

__all__ = ["render"]

_WIDTH = 110

_HEADER = """\
# Program classes: which programs the policy judges as read-only, dangerous, and so on.
#
# GENERATED from the shell analyser's program families (gateway/effects/shell/, each module's FAMILY):
# do not edit by hand. Change a family's `classes` or `publishes`, then regenerate:
#     .venv/bin/python -m gateway.effects.shell.program_classes policies/lib/programs.rego
# tests/test_program_classes.py fails while this file and the families disagree.
package gateway.lib.programs

import rego.v1
"""


def _set(items: Iterable[str], indent: str) -> list[str]:
    """A Rego set literal's lines, its members sorted and wrapped."""
    members = [json.dumps(item) for item in sorted(items)]
    lines: list[str] = []
    line = ""
    for member in members:
        if line and len(indent) * 4 + len(line) + len(member) + 2 > _WIDTH:
            lines.append(f"{indent}{line}")
            line = ""
        line = f"{line} {member}," if line else f"{member},"
    if line:
        lines.append(f"{indent}{line}")
    return lines


def render(registry: Registry = REGISTRY) -> str:
    """policies/lib/programs.rego for these families."""
    out = [_HEADER]
    for name, meaning in PROGRAM_CLASSES.items():
        out.append(f"# {meaning}")
        out.append(f"{name} := {{")
        out.extend(_set(registry.classes.get(name, frozenset()), "\t"))
        out.append("}\n")
    out.append("# program -> the subcommands that publish to a registry: what others install changes")
    out.append("publishing := {")
    for program, subcommands in sorted(registry.publishes.items()):
        out.append(f"\t{json.dumps(program)}: {{")
        out.extend(_set(subcommands, "\t\t"))
        out.append("\t},")
    out.append("}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if target is None:
        sys.stdout.write(render())
    else:
        target.write_text(render())
