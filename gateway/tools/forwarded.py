"""An upstream's answer passed on as the JSON it sent: checked for what the gateway and the client rely on,
never parsed into result models and never re-validated by the gateway's own server.

The check is shallow on purpose: the shape a client needs to read the answer as a ``CallToolResult`` (or
``ReadResourceResult``, ``GetPromptResult``): a content list whose blocks say their type and carry the
field that type needs, ``isError`` a boolean. Anything else the upstream put in a block passes as sent.

    forwarded = Forwarded.checked("tools/call", {"content": [{"type": "text", "text": "hi"}]}, size=48)
    forwarded.is_error                       # False
    forwarded.wire("2025-11-25")             # the result as the client of that protocol era gets it
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_types import SERVER_INFO_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway.tools.jsonrpc import Malformed
from gateway.types import JSONObject

# the fields each result has on the wire (the rest, e.g. a modern upstream's ttlMs, is not passed on)
FIELDS: dict[str, tuple[str, ...]] = {
    "tools/call": ("content", "structuredContent", "isError", "_meta"),
    "resources/read": ("contents", "_meta"),
    "prompts/get": ("description", "messages", "_meta"),
}
# the smallest valid result of each method: what the handler answers the SDK in its place
# (resultType: the 2026-07-28 surface requires it, older ones drop it)
STAND_INS: dict[str, JSONObject] = {
    "tools/call": {"content": [], "resultType": "complete"},
    "resources/read": {"contents": [], "resultType": "complete"},
    "prompts/get": {"messages": [], "resultType": "complete"},
}
# content block type -> the string fields it must carry
BLOCK_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": (),  # checked below: its resource is contents
}


@dataclass(frozen=True)
class Forwarded:
    """A checked upstream result: ``body`` as the upstream sent it, minus the upstream's identity stamp."""

    method: str  # tools/call, resources/read or prompts/get
    body: JSONObject
    size: int  # bytes of the JSON-RPC message it came in

    @classmethod
    def checked(cls, method: str, body: Any, size: int) -> Forwarded:
        """The result if its shape is one a client can read; ``Malformed`` says what is wrong otherwise."""
        if not isinstance(body, dict):
            raise Malformed(f"its result is a JSON {type(body).__name__}, not an object")
        result_type = body.get("resultType", "complete")
        if result_type != "complete":
            # an input_required round (2026-07-28) is not relayed: the gateway asks its own questions
            raise Malformed(f"it answered resultType {result_type!r}; only a complete result is passed on")
        _check_meta(body)
        if method == "tools/call":
            _check_blocks(body.get("content"), "content")
            if not isinstance(body.get("isError", False), bool):
                raise Malformed("isError is not a boolean")
            if not isinstance(body.get("structuredContent", {}), dict):
                raise Malformed("structuredContent is not an object")
        elif method == "resources/read":
            _check_list(body.get("contents"), "contents")
            for i, item in enumerate(body["contents"]):
                _check_contents(item, f"contents[{i}]")
        elif method == "prompts/get":
            _check_list(body.get("messages"), "messages")
            for i, message in enumerate(body["messages"]):
                if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                    raise Malformed(f"messages[{i}] has no role 'user' or 'assistant'")
                _check_block(message.get("content"), f"messages[{i}].content")
        else:
            raise ValueError(f"{method} results are not forwarded")
        meta = body.get("_meta")
        if meta and SERVER_INFO_META_KEY in meta:
            # the upstream's identity stamp must not reach the client as the gateway's
            body = {**body, "_meta": {k: v for k, v in meta.items() if k != SERVER_INFO_META_KEY} or None}
        return cls(method, body, size)

    @property
    def is_error(self) -> bool:
        return self.body.get("isError") is True

    @property
    def text(self) -> str:
        """The text blocks of a tool's answer, joined (what a commit-class call's outcome records)."""
        blocks = self.body.get("content") or []
        return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")

    def stand_in(self) -> JSONObject:
        """The smallest valid result of this method, for the SDK's server to check instead of this one."""
        return dict(STAND_INS[self.method])

    def wire(self, protocol_version: str | None, stamp: Any = None) -> JSONObject:
        """The result as a client of ``protocol_version`` gets it: the fields of its method, and on the
        2026-07-28 era ``resultType`` and the gateway's own ``serverInfo`` stamp (``stamp``)."""
        result = {k: v for k in FIELDS[self.method] if (v := self.body.get(k)) is not None}
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            result["resultType"] = "complete"
            if stamp is not None:
                result["_meta"] = {**result.get("_meta", {}), SERVER_INFO_META_KEY: stamp}
        return result

    def noted(self, text: str, meta_key: str, value: JSONObject) -> Forwarded:
        """The result with one more text block and one more ``_meta`` entry (the checkpoint a tier-2 call took)."""
        noted = self.with_meta(meta_key, value)
        noted.body["content"] = [*self.body.get("content", []), {"type": "text", "text": text}]
        return noted

    def with_meta(self, meta_key: str, value: JSONObject) -> Forwarded:
        """The result with ``_meta[meta_key]`` set to ``value`` (the upstream's own value for it replaced)."""
        body = {**self.body, "_meta": {**(self.body.get("_meta") or {}), meta_key: value}}
        return Forwarded(self.method, body, self.size)

    def without_meta(self, prefix: str) -> tuple[Forwarded, list[str]]:
        """The result without the ``_meta`` keys under ``prefix`` (its own, its blocks'), and where they were."""
        found: list[str] = []

        def clean(part: JSONObject, where: str) -> JSONObject:
            meta = part.get("_meta")
            if not isinstance(meta, dict) or not any(k.startswith(prefix) for k in meta):
                return part
            found.extend(f"{where}_meta.{k}" for k in meta if k.startswith(prefix))
            return {**part, "_meta": {k: v for k, v in meta.items() if not k.startswith(prefix)} or None}

        body = clean(self.body, "")
        for field in ("content", "contents"):
            blocks = body.get(field)
            if isinstance(blocks, list):
                cleaned = [clean(b, f"{field}[{i}].") if isinstance(b, dict) else b for i, b in enumerate(blocks)]
                body = {**body, field: cleaned} if cleaned != blocks else body
        return (Forwarded(self.method, body, self.size), found) if found else (self, found)


def _check_meta(body: JSONObject) -> None:
    if not isinstance(body.get("_meta") or {}, dict):
        raise Malformed("_meta is not an object")


def _check_list(items: Any, where: str) -> None:
    if not isinstance(items, list):
        raise Malformed(f"{where} is not a list")


def _check_blocks(blocks: Any, where: str) -> None:
    _check_list(blocks, where)
    for i, block in enumerate(blocks):
        _check_block(block, f"{where}[{i}]")


def _check_block(block: Any, where: str) -> None:
    if not isinstance(block, dict):
        raise Malformed(f"{where} is not an object")
    kind = block.get("type")
    fields = BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise Malformed(f"{where} has no known type ({str(kind)[:40]!r})")
    for name in fields:
        if not isinstance(block.get(name), str):
            raise Malformed(f"{where} is {kind} content without a string {name!r}")
    if kind == "resource":
        _check_contents(block.get("resource"), f"{where}.resource")


def _check_contents(item: Any, where: str) -> None:
    if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
        raise Malformed(f"{where} has no string 'uri'")
    if not isinstance(item.get("text"), str) and not isinstance(item.get("blob"), str):
        raise Malformed(f"{where} has neither a string 'text' nor a string 'blob'")
