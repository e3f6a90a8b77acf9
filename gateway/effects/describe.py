"""Arguments become Effects: the describe stage's facts, with no judgement.

A tool's ``argument_roles`` say which argument is a path (read, write, delete), a shell command, a
URL, a resource URI (an upstream's resources: a ``file://`` URI is a read of that path, judged like
fs_read), or plain data (no effect). Built-in tools declare them; upstream tools get them from gateway.yaml.
An argument that cannot be read as its role says (a path that is not a string, say) is recorded as opaque,
and so is an upstream tool's argument with no role at all (one the upstream added since gateway.yaml was
written, say), unless the operator declared the tool read-only: what it does with the value is not known.

    effects = describe(spec, {"path": "src/a.py", "content": "..."}, workspace)
    effects.creates   # ["src/a.py"] when the file does not exist yet
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from gateway.effects import network, shell
from gateway.effects.paths import Workspace, suspicious_unicode
from gateway.errors import InvalidArguments
from gateway.types import Effects, JSONObject, ToolSpec

LIST_FIELDS = (
    "reads",
    "writes",
    "creates",
    "deletes",
    "recursive_deletes",
    "commands",
    "network",
    "packages",
    "opaque",
)


def describe(spec: ToolSpec, arguments: JSONObject, workspace: Workspace) -> Effects:
    facts: dict[str, Any] = {name: [] for name in LIST_FIELDS}
    facts["privileged"] = False
    cwd = workspace.root
    if isinstance(arguments.get("cwd"), str) and spec.argument_roles.get("cwd"):
        try:
            cwd = workspace.locate(arguments["cwd"])
        except InvalidArguments as exc:
            facts["opaque"].append(f"cwd: {exc.message}")
    if spec.provider.startswith("upstream:") and not spec.read_only:
        for name in sorted(set(arguments) - set(spec.argument_roles)):
            facts["opaque"].append(f"argument {name[:80]!r} has no role in gateway.yaml (arguments:)")
    for name, role in spec.argument_roles.items():
        if name not in arguments or role == "data":
            continue
        value = arguments[name]
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                facts["opaque"].append(f"argument {name!r} ({role}) is not a string")
            elif role == "command":
                merge(facts, shell.describe_command(item, workspace, cwd))
            elif role == "url":
                merge(facts, network.describe_url(item, workspace, via=spec.name))
            elif role == "resource":
                _resource(facts, item, workspace)
            else:
                _path(facts, role, item, workspace, recursive=arguments.get("recursive") is True)
    return Effects.model_validate(facts)


def merge(facts: dict[str, Any], more: Effects) -> None:
    """Add ``more`` to an accumulating facts dict."""
    for key in LIST_FIELDS:
        facts[key].extend(getattr(more, key))
    facts["privileged"] = facts["privileged"] or more.privileged


def _resource(facts: dict[str, Any], uri: str, workspace: Workspace) -> None:
    """A resource URI: ``file://`` names a path on the upstream's machine, which is this one for a stdio
    upstream and the one the policy must assume for any other, so it is a read of that path. Other schemes
    name no path here."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        return
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        facts["opaque"].append(f"resource {uri!r}: a file URI with a host, query or fragment")
        return
    _path(facts, "read", unquote(parts.path), workspace, recursive=False)


def _path(facts: dict[str, Any], role: str, raw: str, workspace: Workspace, recursive: bool) -> None:
    why = suspicious_unicode(raw)
    if why:
        facts["opaque"].append(f"path {raw!r} contains {why}")
    try:
        real = workspace.locate(raw)
    except InvalidArguments as exc:
        facts["opaque"].append(f"path {raw!r}: {exc.message}")
        return
    shown = workspace.display(real)
    if role == "read":
        facts["reads"].append(shown)
    elif role == "write":
        facts["writes" if real.exists() else "creates"].append(shown)
    elif role == "delete":
        facts["recursive_deletes" if recursive and real.is_dir() else "deletes"].append(shown)
