"""What the command line prints: JSON for machines, tables and blocks for people.

A command prints for people when stdout is a terminal and JSON otherwise (piped, redirected, captured),
or always JSON with ``--json``. Everything shown to a person goes through ``clean`` (secrets masked,
control characters escaped), so nothing an agent wrote can drive the terminal.

    emit(value)                                   # JSON, indented
    table(rows, [("id", "ID"), ("state", "STATE")])
    block({"decision": "deny", "tier": 3})
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

Column = tuple[str, str] | tuple[str, str, Callable[[Any], Any]]


def wants_json(args: argparse.Namespace) -> bool:
    """JSON when asked for, or when nobody is looking (stdout is not a terminal)."""
    return bool(getattr(args, "json", False)) or not sys.stdout.isatty()


def emit(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def clean(value: Any, limit: int | None = None) -> str:
    from gateway.traces import clean as clean_text

    return "-" if value is None or value == "" else clean_text(value, limit)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], empty: str = "nothing to show") -> None:
    """Rows as aligned columns under a header; ``columns`` are (key, HEADER[, how to show the value])."""
    if not rows:
        print(empty)
        return
    cells = [[clean(c[2](row[c[0]]) if len(c) == 3 else row.get(c[0]), 60) for c in columns] for row in rows]
    headers = [c[1] for c in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    for line in [headers, *cells]:
        print("  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip())


def block(fields: Mapping[str, Any]) -> None:
    """``label  value`` lines; nested values as one line of JSON."""
    width = max((len(k) for k in fields), default=0)
    for key, value in fields.items():
        print(f"{key:{width}}  {clean(value)}")


def gateway_command() -> str:
    """How to run this gateway from a shell: ``gateway`` when that is the one on PATH, else its full path
    (``make demo`` runs .venv/bin/gateway, which is not on PATH unless the venv is active)."""
    installed = Path(sys.executable).parent / "gateway"
    on_path = shutil.which("gateway")
    if on_path and installed.exists() and Path(on_path).resolve() == installed.resolve():
        return "gateway"
    if installed.exists():
        return shlex.quote(str(installed))
    return f"{shlex.quote(sys.executable)} -m gateway"


def show_check(args: argparse.Namespace, report: dict[str, Any]) -> int:
    """``gateway check``'s decision printed (JSON, or for a person on a terminal, text), and its exit code."""
    from gateway.cli import EXIT_ASK, EXIT_DENY

    emit(report) if wants_json(args) else print_decision(report, args.agent, args.role, args.tool)
    return {"allow": 0, "ask": EXIT_ASK}.get(report["action"], EXIT_DENY)


def print_decision(report: dict[str, Any], agent: str, role: str, tool: str) -> None:
    """The decision for a person: what, why, on which facts; with --explain the input and every rule fired."""
    action = {"allow": "ALLOW", "ask": "ASK (a person approves)", "deny": "DENY"}.get(report["action"], "DENY")
    print(f"{action}  tier {report['tier']}  {clean(tool)} as {clean(agent)} ({clean(role)})")
    print(f"rules    {clean(', '.join(report['rules']))}")
    for i, reason in enumerate(report["reasons"]):
        print(f"{'reasons' if i == 0 else '':8} {clean(reason)}")
    effects = {k: v for k, v in (report.get("effects") or {}).items() if v and k != "commands"}
    for command in (report.get("effects") or {}).get("commands") or []:
        print(f"command  {clean(' '.join(command['argv']))}")
    for key, value in effects.items():
        print(f"{key:8} {clean(value)}")
    if "fired" in report:
        print("rules fired:")
        if report["fired"] is None:
            print("  (this policy bundle has no data.gateway.fired: copy policies/decision.rego from this version)")
        for fired in report["fired"] or []:
            print(f"  {fired['effect']:7} {clean(fired['rule']):28} {clean(fired['reason'])}")
        print("input document:")
        print(json.dumps(report["input"], indent=2, default=str))
