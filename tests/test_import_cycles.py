"""No import cycles in gateway/: the graph of module-level imports (those under TYPE_CHECKING too, since a type
names a dependency all the same) has no cycle. ``from package import module`` is an edge to that module; a
package's own __init__ importing its modules is how a package is assembled, not a cycle. Imports inside
functions are deferred on purpose (a command-line check must not load the server) and are not edges."""

from __future__ import annotations

import ast
from pathlib import Path

GATEWAY = Path(__file__).resolve().parent.parent / "gateway"


def modules() -> dict[str, Path]:
    found = {}
    for path in GATEWAY.rglob("*.py"):
        parts = list(path.relative_to(GATEWAY.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(tree: ast.Module, name: str, package: bool, known: dict[str, Path]) -> set[str]:
    """The gateway modules a module imports at module level (TYPE_CHECKING blocks included)."""
    edges: set[str] = set()

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If | ast.Try):
                walk(node.body)
                walk(node.orelse)
                for handler in getattr(node, "handlers", []):
                    walk(handler.body)
                walk(getattr(node, "finalbody", []))
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = name.split(".") if package else name.split(".")[:-1]
                    parent = parent[: len(parent) - node.level + 1]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                submodules = {f"{base}.{alias.name}" for alias in node.names} & known.keys()
                edges.update(submodules)
                if len(submodules) < len(node.names):
                    edges.add(base)

    walk(tree.body)
    return {edge for edge in edges if edge in known and edge != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_gateway_has_no_import_cycles() -> None:
    known = modules()
    graph = {
        name: imported(ast.parse(path.read_text()), name, path.name == "__init__.py", known)
        for name, path in known.items()
    }
    assert cycles(graph) == []


def test_types_holds_values_and_imports_nothing_of_the_gateway() -> None:
    known = modules()
    assert imported(ast.parse(known["gateway.types"].read_text()), "gateway.types", False, known) == set()


def test_a_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
