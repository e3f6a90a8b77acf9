"""Flow: the session's information-flow labels (gateway/labels.py), read before the policy decides and raised by
what each call's result brought the agent.

    ReadFlow     before decide: a request that carries labels of its own is refused (forged_labels, recorded);
                 the session's labels become ``input.flow``
    LabelResult  a finish stage, before record: a call whose result reached the agent (a tools/call, resource
                 read or prompt that ran; a hook event Claude Code was allowed to run) raises the labels by
                 what it read; the call's ledger row names what it raised (detail.flow), and the result's
                 ``_meta`` says the session's labels once it has any

What is untrusted: a network fetch (a command that reached a host), an upstream tool, resource or prompt that
gateway.yaml does not declare ``trusted``, a file the session itself downloaded or decoded, read again, and
Claude Code's WebFetch and WebSearch. What is confidential: what the secrets policy recognised in the call
(its rules secrets.*), and a path read outside the workspace. The task's repository and the gateway's own
tools are trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gateway.judge.call import Call, CallKind
from gateway.judge.execute import with_meta
from gateway.labels import (
    FLOW_META,
    Flow,
    FlowLabels,
    ForgedLabels,
    Source,
    forged_labels,
    session_of,
)

if TYPE_CHECKING:
    from gateway.config import UpstreamConfig

__all__ = ["DECODERS", "LabelResult", "ReadFlow", "result_sources"]

# Programs whose output is decoded bytes: what they write is opaque content the session made, not the repository's
DECODERS = frozenset({"base64", "base32", "basenc", "xxd", "uudecode", "openssl", "gpg", "gunzip", "zcat", "unzip"})
WEB_TOOLS = {"WebFetch": "url", "WebSearch": "query"}  # Claude Code's own network tools, by the input naming the source
SECRET_RULES = ("secrets.access", "secrets.named")
MAX_WHAT = 300


class ReadFlow:
    """Refuses a request that claims labels; reads the session's labels into ``call.flow`` (``input.flow``)."""

    def __init__(self, labels: FlowLabels) -> None:
        self.labels = labels

    async def __call__(self, call: Call) -> None:
        assert call.principal is not None
        forged = forged_labels(call.arguments, call.origin.meta)
        if forged:
            call.detail["forged_labels"] = forged
            raise ForgedLabels(f"labels are the gateway's to set; the request carried {', '.join(sorted(forged))}")
        call.flow = self.labels.read(session_of(call.principal, call.task))


class LabelResult:
    """Raises the session's labels by what a call's result brought the agent (a finish stage, before record)."""

    def __init__(self, labels: FlowLabels, upstreams: Mapping[str, UpstreamConfig]) -> None:
        self.labels = labels
        self.upstreams = upstreams

    async def __call__(self, call: Call) -> None:
        if call.principal is None or not _delivered(call):
            return
        if call.flow is None:  # a hook event that arrived decided (WebFetch, WebSearch) was never described
            call.flow = self.labels.read(session_of(call.principal, call.task))
        sources, files = result_sources(call, self._trusted_upstream(call))
        if _news(call.flow, sources, files):  # the store is written only when a label or a file is new
            call.flow = self.labels.raise_(call.flow.session, sources, files)
            call.detail["flow"] = {
                **call.flow.summary(),
                "raised": [s.as_dict() for s in sources],
                **({"files": files} if files else {}),
            }
        if call.result is not None and call.flow.sources:
            call.result = with_meta(call.result, FLOW_META, call.flow.summary())

    def _trusted_upstream(self, call: Call) -> bool:
        prefix = call.spec.provider.prefix if call.spec is not None else None
        upstream = self.upstreams.get(prefix) if prefix is not None else None
        return upstream is not None and upstream.trusted


def _news(flow: Flow, sources: list[Source], files: list[str]) -> bool:
    """Whether a result adds a source or a file the session's labels lack."""
    known = {(s["label"], s["what"]) for s in flow.sources}
    return any((s.label, s.what) not in known for s in sources) or not set(files) <= set(flow.files)


def _delivered(call: Call) -> bool:
    """Whether what the call read reaches the agent: it ran (an answer, even an error), or Claude Code may run it."""
    if call.kind == CallKind.CALL:
        return call.outcome in ("ok", "error") and call.result is not None
    return call.kind == CallKind.HOOK and call.outcome == "allowed"


def result_sources(call: Call, trusted_upstream: bool) -> tuple[list[Source], list[str]]:
    """What a call's result raises (its sources), and the files it wrote that the session downloaded or decoded."""
    sources: list[Source] = []
    files: list[str] = []

    def add(label: str, what: str) -> None:
        sources.append(Source(label, what[:MAX_WHAT], call.tool, call.call_id))  # type: ignore[arg-type]

    claude_tool = call.detail.get("claude_tool")
    if call.kind == CallKind.HOOK and claude_tool in WEB_TOOLS:
        value = call.arguments.get(WEB_TOOLS[claude_tool])
        add("untrusted", f"{claude_tool} {value if isinstance(value, str) else ''}".strip())
    spec = call.spec
    if spec is not None and spec.provider.upstream and not trusted_upstream:
        add("untrusted", f"{spec.provider} {call.tool}")
    effects = call.effects
    # what a call read, fetched or ran: an upstream call (every call of the forward path) has none of it
    if effects is not None and (effects.network or effects.commands or effects.reads):
        written = [*effects.writes, *effects.creates]
        if effects.network:
            add("untrusted", "network: " + ", ".join(sorted({n.host for n in effects.network})))
            files += written
        decoders = sorted({c.program for c in effects.commands if c.program in DECODERS})
        if decoders:
            add("untrusted", f"decoded by {', '.join(decoders)}")
            files += written
        reads = {*effects.reads, *(p for c in effects.commands for p in c.reads)}
        known = set(call.flow.files) if call.flow is not None else set()
        downloaded = sorted(reads & known)
        if downloaded:
            add("untrusted", "downloaded or decoded by this session: " + ", ".join(downloaded))
        outside = sorted(p for p in reads if p.startswith("/"))
        if outside:
            add("confidential", "outside the workspace: " + ", ".join(outside))
    decision = call.decision
    if decision is not None and any(r in SECRET_RULES for r in decision.rules):
        secret = [r for r in decision.reasons if "secret" in r]
        add("confidential", secret[0] if secret else "secrets")
    return sources, files
