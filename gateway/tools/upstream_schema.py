"""An upstream tool's input schema as the gateway checks arguments against it: patterns in linear time.

jsonschema matches ``pattern`` and ``patternProperties`` with Python's ``re``, which backtracks and holds
the GIL while it does: an upstream whose schema says ``^(\\w+\\s?)*$`` would freeze the gateway for every
agent on an ordinary sentence ending in a full stop. Here those keywords, and ``additionalProperties``
(which consults patternProperties), match with RE2 (gateway/linear_regex.py). A pattern RE2 cannot run
(lookaround, backreferences: zod's e-mail pattern has lookahead) is left to the upstream, which checks its
own input anyway: it constrains the upstream's own arguments, and the policy judges arguments by their
declared roles, not by patterns the upstream wrote. A schema that has both patternProperties and
unevaluatedProperties is refused: jsonschema evaluates that pair with ``re``, out of reach from here.

    validator = upstream_validator(spec.input_schema)    # raises SchemaRefused
    errors = list(validator.iter_errors(arguments))
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from gateway.linear_regex import Pattern, PatternRefused, linear

__all__ = ["SchemaRefused", "upstream_validator"]


class SchemaRefused(ValueError):
    """An input schema the gateway will not check arguments against (so the tool is not called)."""


def upstream_validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for ``schema`` whose patterns RE2 matches; raises SchemaRefused."""
    base = jsonschema.validators.validator_for(schema)
    try:
        base.check_schema(schema)
    except jsonschema.SchemaError:
        raise SchemaRefused("it is not a valid JSON Schema") from None
    if {"patternProperties", "unevaluatedProperties"} <= _keywords(schema):
        raise SchemaRefused("it combines patternProperties with unevaluatedProperties, which the gateway cannot check")
    return _linear(base)(schema)


@functools.cache
def _linear(base: Any) -> Any:
    overrides = {"pattern": _pattern, "patternProperties": _pattern_properties}
    return jsonschema.validators.extend(base, {**overrides, "additionalProperties": _additional_properties})


@functools.lru_cache(maxsize=1024)
def _compiled(source: str) -> Pattern | None:
    try:
        return linear(source)
    except PatternRefused:
        return None  # left to the upstream (see the module's docstring)


def _matches(source: str, text: str) -> bool:
    """Whether ``source`` finds ``text``; a pattern RE2 cannot run matches everything (nothing refused)."""
    compiled = _compiled(source)
    return compiled is None or compiled.search(text) is not None


def _pattern(validator: Any, source: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _matches(source, instance):
        yield ValidationError(f"{instance[:100]!r} does not match {source[:100]!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for source, subschema in patterns.items():
        if _compiled(source) is None:
            continue  # which names it governs is the upstream's to check
        for name, value in instance.items():
            if _matches(source, name):
                yield from validator.descend(value, subschema, path=name, schema_path=source)


def _additional_properties(
    validator: Any, extra: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = sorted(n for n in instance if n not in declared and not any(_matches(p, n) for p in patterns))
    if validator.is_type(extra, "object"):
        for name in extras:
            yield from validator.descend(instance[name], extra, path=name)
    elif not extra and extras:
        yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, extras))} unexpected)")


def _keywords(schema: Any) -> set[str]:
    """Every key of every object in ``schema``."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(k for k in node if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found
