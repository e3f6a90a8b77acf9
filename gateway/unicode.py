"""Text that is not valid Unicode: a lone UTF-16 surrogate, which JSON can carry ("\\ud800") and no UTF-8
store, hash, log or file name can. A request holding one is refused with a clear error and recorded with the
text escaped, never dropped: the ledger writes each lone surrogate as the six characters of its JSON escape.

    lone_surrogate({"path": "a\\ud800"})          # ("path", "\\\\ud800"): where, and the escape
    escaped("a\\ud800")                           # "a\\\\ud800": valid Unicode, what the record keeps
    not_unicode("argument", {"path": "\\ud800"})  # the refusal's words, or None
    unparsable_request(body)                     # the JSON-RPC request an SDK's strict parser refuses
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["SURROGATE_ESCAPE", "escaped", "escaped_value", "lone_surrogate", "not_unicode", "unparsable_request"]

SURROGATE = re.compile("[\ud800-\udfff]")
# a JSON escape of a surrogate (high or low); a body without one (and valid UTF-8) holds no lone surrogate
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def escaped(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``, six characters)."""
    return text if text.isascii() or not SURROGATE.search(text) else SURROGATE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escaped_value(value: Any) -> Any:
    """A JSON value with every string in it (keys too) ``escaped``."""
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, dict):
        return {escaped(str(k)): escaped_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escaped_value(v) for v in value]
    return value


def lone_surrogate(value: Any, where: str = "") -> tuple[str, str] | None:
    """Where in a JSON value the first lone surrogate is (``a.b[0]``; a key's own path when it is in a key),
    and its escape; None when every string in it is valid Unicode."""
    if isinstance(value, str):
        match = None if value.isascii() else SURROGATE.search(value)
        return (where, _escape(match)) if match else None
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{escaped(str(key))}" if where else escaped(str(key))
            found = lone_surrogate(str(key), path) or lone_surrogate(item, path)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = lone_surrogate(item, f"{where}[{index}]")
            if found:
                return found
    return None


def not_unicode(what: str, value: Any) -> str | None:
    """Why ``value`` (the ``what``: "argument", "request field") cannot be taken, or None when it can."""
    found = lone_surrogate(value)
    if found is None:
        return None
    where, escape = found
    place = f"{what} '{where}'" if where else what
    return (
        f"{place} is not valid Unicode: it holds a lone UTF-16 surrogate ({escape}), which no UTF-8 text can "
        "carry; send surrogates only in pairs (or the character itself, as UTF-8). Nothing was run"
    )


def unparsable_request(body: bytes | str) -> dict[str, Any] | None:
    """The JSON-RPC request (an object with a method and an id) in a raw message whose text is not valid
    Unicode (a lone surrogate escape; bytes that are not UTF-8 count as lone surrogates too): what the MCP
    SDK's strict JSON parser refuses, so the gateway answers and records it itself. None for anything else."""
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if not SURROGATE_ESCAPE.search(raw):
        try:
            raw.decode("utf-8")
            return None  # valid UTF-8 and no surrogate escape: nothing for the strict parser to refuse
        except UnicodeDecodeError:
            pass
    try:
        message = json.loads(raw.decode("utf-8", "surrogateescape"))
    except ValueError:
        return None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str) or "id" not in message:
        return None
    return message if lone_surrogate(message) else None
