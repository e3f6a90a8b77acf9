"""Execute: the provider runs the call (a built-in tool, one of the gateway's own, or an upstream's)."""

from __future__ import annotations

from gateway.errors import GatewayError, ToolFailed
from gateway.judge.approval import granted_confinement
from gateway.judge.call import Call, Judge
from gateway.judge.relay import RelayToClient
from gateway.labels import GATEWAY_META_PREFIX
from gateway.origin import no_progress
from gateway.tools.spec import CallResult, ToolInvocation
from gateway.types import JSONObject

__all__ = ["CHECKPOINT_META", "Execute", "with_checkpoint", "with_meta", "without_gateway_meta"]

CHECKPOINT_META = "io.github.mcp-policy-gateway/checkpoint"


class Execute:
    """Runs the call's tool with the place it may act in (its worktree, its confinement and granted egress).
    An upstream's tool may ask the calling client things meanwhile, each judged by ``relay``."""

    def __init__(self, relay: Judge | None = None) -> None:
        self.relay = relay

    async def __call__(self, call: Call) -> None:
        assert call.spec is not None and call.principal is not None and call.workspace is not None
        progress = call.origin.progress or no_progress
        invocation = ToolInvocation(
            arguments=call.arguments,
            workspace=call.workspace,
            progress=progress,
            principal=call.principal,
            trace_id=call.trace_id,
            input_responses=call.origin.input_responses,
            request_state=call.origin.request_state,
            confinement=granted_confinement(call),
            flow=call.flow,
        )
        if self.relay is not None and call.spec.provider.upstream:
            invocation.relay = RelayToClient(call, self.relay)
        try:
            call.result = await call.spec.handler(invocation)
            if call.spec.provider.upstream:  # an upstream may not speak in the gateway's name (labels, budgets)
                call.result, claimed = without_gateway_meta(call.result)
                if claimed:
                    call.detail["forged_labels"] = claimed
        except GatewayError:
            raise
        except OSError as exc:
            raise ToolFailed(f"{call.spec.name} failed: {exc.strerror or exc}") from None
        # a CallToolResult, or an upstream's answer passed on as sent (Forwarded): both say is_error
        call.outcome = "error" if getattr(call.result, "is_error", False) is True else "ok"
        if call.safeguard is not None and call.method == "tools/call":
            call.result = with_checkpoint(call.result, call.safeguard, structured=not call.spec.provider.upstream)


def with_meta(result: CallResult, key: str, value: JSONObject) -> CallResult:
    """The result with ``_meta[key]`` set to ``value`` (an upstream's own value for the key replaced)."""
    import mcp_types as mt

    from gateway.tools.forwarded import Forwarded

    if isinstance(result, Forwarded):
        return result.with_meta(key, value)
    if isinstance(result, mt.CallToolResult):
        return result.model_copy(update={"meta": {**(result.meta or {}), key: value}})
    return result


def with_checkpoint(result: CallResult, safeguard: JSONObject, structured: bool) -> CallResult:
    """The result, telling the agent which checkpoint was taken before the call and how it is undone (in
    the text, in _meta, and in the gateway's own structuredContent; an upstream's may follow its schema)."""
    import mcp_types as mt

    from gateway.tools.forwarded import Forwarded  # loaded by now: the server and the upstreams are

    note = (
        f"checkpoint {safeguard['id']} was taken before this call; '{safeguard['rollback']}' (run by a person) "
        f"restores {safeguard.get('restores', 'what it changed')}"
    )
    if isinstance(result, Forwarded):
        return result.noted(note, CHECKPOINT_META, safeguard)
    if not isinstance(result, mt.CallToolResult):
        return result
    update: JSONObject = {
        "content": [*result.content, mt.TextContent(type="text", text=note)],
        "meta": {**(result.meta or {}), CHECKPOINT_META: safeguard},
    }
    if structured and isinstance(result.structured_content, dict):
        update["structured_content"] = {**result.structured_content, "checkpoint": safeguard}
    return result.model_copy(update=update)


def without_gateway_meta(result: CallResult) -> tuple[CallResult, list[str]]:
    """A result without the ``_meta`` keys of the gateway's namespace an upstream put in it (labels, a budget),
    and which they were: only the gateway speaks in its name, and it adds its own after."""
    import mcp_types as mt

    from gateway.tools.forwarded import Forwarded

    if isinstance(result, Forwarded):
        return result.without_meta(GATEWAY_META_PREFIX)
    if isinstance(result, mt.CallToolResult) and result.meta:
        claimed = [k for k in result.meta if k.startswith(GATEWAY_META_PREFIX)]
        if claimed:
            kept = {k: v for k, v in result.meta.items() if k not in claimed} or None
            return result.model_copy(update={"meta": kept}), [f"_meta.{k}" for k in claimed]
    return result, []
