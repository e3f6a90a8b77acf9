"""The enforcement pipeline: every tools/call (and resources/read, prompts/get) passes these stages, in order.

    authenticate -> resolve -> valid text -> validate -> describe -> decide -> act on tier -> record intent
        -> execute -> check, and always: record

A stage is a plain async callable ``(call) -> None`` that reads and fills the ``Call`` (the spirit of
structlog's processors). A stage stops the call by raising a ``GatewayError``, or by setting
``call.result`` early (a tier-3 call waiting for a human); the ``record`` stage runs in every case,
so a refused call is recorded exactly like an allowed one. Nothing with a side effect executes before the
write-ahead ``record intent`` event is committed (a tier-1 read-only call has one final row instead).

    pipeline = Pipeline([Authenticate(auth), Resolve(catalog), ..., Execute()], finish=Record(ledger))
    result = await pipeline(Call(tool="fs_read", arguments={"path": "README.md"}, origin=origin))
"""

from __future__ import annotations

import fnmatch
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import structlog
from pydantic import ValidationError

from gateway.approvals import APPROVAL_SCHEMA, Approvals, CallSite, RequestStateSeal, call_key
from gateway.checkpoints import Checkpoints
from gateway.config import ApprovalsConfig, LimitsConfig
from gateway.effects.describe import describe
from gateway.effects.git_hooks import hooks_path
from gateway.effects.paths import Workspace
from gateway.errors import (
    ArgumentsTooLarge,
    DecisionDeadline,
    Denied,
    GatewayError,
    InvalidArguments,
    InvalidUnicode,
    Quarantined,
    ToolFailed,
    ToolNotGranted,
    UnknownTool,
    UpstreamUnavailable,
)
from gateway.identity.roles import RoleSet
from gateway.ledger.chain import Ledger, digest
from gateway.locks import this_process
from gateway.policy.engine import PolicyEngine
from gateway.policy.input import INPUT_KINDS, input_document, tool_facts
from gateway.tools.catalog import Catalog
from gateway.types import (
    CallResult,
    Decision,
    Effects,
    JSONObject,
    Origin,
    Outcome,
    Principal,
    ToolInvocation,
    ToolSpec,
)
from gateway.unicode import not_unicode

if TYPE_CHECKING:
    import mcp_types as mt

    from gateway.sandbox import Confinement
    from gateway.telemetry import Telemetry
    from gateway.tools.pins import PinStatus

log = structlog.get_logger("gateway.pipeline")


def new_id(nbytes: int = 16) -> str:
    return secrets.token_hex(nbytes)


@dataclass
class Call:
    """One tools/call on its way through the pipeline; each stage fills in its part."""

    tool: str
    arguments: JSONObject
    origin: Origin
    # what the ledger records it as: "call" (a tools/call), or a decision without a run: "check" (gateway
    # check), "hook" (Claude Code's own tools), "verify" (a verification command the gateway runs itself),
    # "ceremony_check" (a merge the merge ceremony is about to make, judged as the intent_commit it is)
    kind: str = "call"
    # the MCP request: a tool call, or a read of an upstream's resource (``tool`` is then its URI until
    # Resolve names it) or prompt; the last two are judged as reads of that upstream
    method: str = "tools/call"
    call_id: str = field(default_factory=new_id)
    trace_id: str = field(default_factory=new_id)
    span_id: str = field(default_factory=lambda: new_id(8))
    started: float = field(default_factory=time.perf_counter)
    principal: Principal | None = None
    spec: ToolSpec | None = None
    pin: PinStatus | None = None  # an upstream definition's pin status: input.tool.pin, part of the approval key
    workspace: Workspace | None = None
    task: JSONObject | None = None  # input.task: the task the caller works on, as the policy sees it
    intent: JSONObject | None = None  # input.intent: the intent a commit-protocol call names
    confinement: Confinement | None = None  # the sandbox its commands (or its upstream) run in: context.sandbox
    effects: Effects | None = None
    decision: Decision | None = None
    policy_input: JSONObject | None = None  # the input document the policy judged (gateway check --explain)
    safeguard: JSONObject | None = None
    result: CallResult | None = None
    error: GatewayError | None = None
    outcome: Outcome | None = None
    detail: JSONObject = field(default_factory=dict)
    intent_recorded: bool = False
    denials_as_errors: bool = True  # the role's choice; see Role.denials

    def stop(self, error: GatewayError) -> None:
        self.error, self.outcome = error, error.outcome

    @property
    def pin_facts(self) -> JSONObject | None:
        """``input.tool.pin``: the upstream definition's pin status, None for the gateway's own tools."""
        return self.pin.as_input() if self.pin is not None else None

    def response(self) -> CallResult:
        if self.error is not None:
            return error_result(self.error, self.decision, self.call_id, self.denials_as_errors)
        assert self.result is not None
        return self.result


def error_result(
    error: GatewayError, decision: Decision | None, call_id: str, denials_as_errors: bool = True
) -> mt.CallToolResult:
    """A tool error the model can act on: the same facts as text and as structuredContent.

    A denial is a plain result (isError false, ``"status": "denied"``) for roles that ask for it; the
    model reads the same reasons either way, and nothing ran either way.
    """
    import mcp_types as mt  # here, not at the top: a command-line check never builds a result

    structured: JSONObject = {"error": error.as_dict(), "call_id": call_id}
    text = f"{error.code}: {error.message}"
    if decision is not None and decision.action == "deny":
        structured["decision"] = decision.model_dump()
        text += f"\n(policy rules: {', '.join(decision.rules)}; nothing was run)"
    is_error = denials_as_errors or error.outcome != "denied"
    if not is_error:
        structured["status"] = "denied"
    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=text)], structured_content=structured, is_error=is_error
    )


Stage = Callable[[Call], Awaitable[None]]


class Pipeline:
    """Runs the stages in order; ``finish`` (the record stage) runs whatever happened."""

    def __init__(self, stages: Sequence[Stage], finish: Stage) -> None:
        self.stages = list(stages)
        self.finish = finish

    async def __call__(self, call: Call) -> CallResult:
        return (await self.run(call)).response()

    async def run(self, call: Call) -> Call:
        """The call through every stage, recorded; answers the call with its decision, result or error."""
        # every log line written during the call names it; the trace is rebound once situate picks it
        names = {"trace_id": call.trace_id, "span_id": call.span_id, "call_id": call.call_id}
        with structlog.contextvars.bound_contextvars(**names):
            trace_id = call.trace_id
            try:
                for stage in self.stages:
                    await stage(call)
                    if call.trace_id != trace_id:
                        trace_id = call.trace_id
                        structlog.contextvars.bind_contextvars(trace_id=trace_id)
                    if call.result is not None:
                        break
            except GatewayError as error:
                call.stop(error)
            except Exception:
                # a bug, not a refusal: the caller learns nothing internal, the log gets the traceback
                log.exception("stage failed", tool=call.tool, call_id=call.call_id)
                call.stop(ToolFailed(f"internal gateway error (call {call.call_id}); see the gateway log"))
            if call.trace_id != trace_id:
                structlog.contextvars.bind_contextvars(trace_id=call.trace_id)
            await self.finish(call)
            return call


# --- authenticate ---------------------------------------------------------------------------------


class Verifier(Protocol):
    def verify(self, token: str | None) -> Principal: ...


class Authenticate:
    """The credential becomes a Principal, on every call: an expired or revoked token stops here."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier

    async def __call__(self, call: Call) -> None:
        call.principal = self.verifier.verify(call.origin.token)


# --- resolve --------------------------------------------------------------------------------------


class ToolGrants(Protocol):
    def grants(self, principal: Principal, tool: str) -> bool: ...
    def denials_as_errors(self, principal: Principal) -> bool: ...


class Resolve:
    """The tool name becomes a ToolSpec, if the caller's role may see it.

    A tool the role is not granted gets the same answer as a tool that does not exist, so a role
    cannot probe for tools; the ledger still tells the two apart. An upstream definition that is not pinned
    as listed (changed, new, renamed: gateway/tools/pins.py) is quarantined: refused with the reason.
    """

    def __init__(self, catalog: Catalog, grants: ToolGrants) -> None:
        self.catalog = catalog
        self.grants = grants

    async def __call__(self, call: Call) -> None:
        assert call.principal is not None
        call.denials_as_errors = self.grants.denials_as_errors(call.principal)
        # the gateway's own calls (a verification command) bring the spec that describes them
        spec = call.spec or self.catalog.find(call.method, call.tool)
        if spec is not None and call.method == "resources/read":
            call.tool = spec.name  # what roles grant and the ledger records; the URI is the argument
        granted = self.grants.grants(call.principal, call.tool)
        if spec is None or not granted:
            upstream = self.catalog.upstream_of(call.tool)
            if granted and upstream is not None and upstream.state != "up":
                raise UpstreamUnavailable(f"upstream {upstream.prefix!r} is down: {upstream.error or 'not connected'}")
            call.detail["tool_exists"] = spec is not None
            what = {"resources/read": "resource", "prompts/get": "prompt"}.get(call.method, "tool")
            asked = (
                call.arguments.get("uri") if call.method == "resources/read" else call.tool
            )  # as the caller named it
            message = f"no {what} named {asked!r} is available to role {call.principal.role!r}"
            raise ToolNotGranted(message) if spec is not None else UnknownTool(message)
        call.spec = spec
        call.pin = self.catalog.pin(spec)
        if call.pin is not None and call.pin.quarantined:
            upstream = spec.provider.removeprefix("upstream:")
            raise Quarantined(call.pin.reason(spec.name, upstream), pin=call.pin_facts)


# --- validate -------------------------------------------------------------------------------------


class ValidText:
    """Refuses a call whose arguments (or the input responses and request state it brings back) are not valid
    Unicode: a lone UTF-16 surrogate, which JSON can carry and no file name, store, hash or log can. Nothing
    could describe or run it faithfully; the ledger records it with the text escaped (gateway/unicode.py)."""

    async def __call__(self, call: Call) -> None:
        origin = call.origin
        for what, value in (
            ("argument", call.arguments),
            ("input response", origin.input_responses),
            ("request state", origin.request_state),
        ):
            problem = not_unicode(what, value)
            if problem is not None:
                raise InvalidUnicode(problem)


class Validate:
    """Arguments within the size limit and valid against the tool's schema; the error names the field."""

    def __init__(self, limits: LimitsConfig) -> None:
        self.limits = limits
        self._validators: dict[str, tuple[int, Any]] = {}

    async def __call__(self, call: Call) -> None:
        assert call.spec is not None
        size = len(json.dumps(call.arguments, ensure_ascii=False).encode())
        if size > self.limits.max_argument_bytes:
            raise ArgumentsTooLarge(
                f"arguments are {size} bytes; the limit is {self.limits.max_argument_bytes}", size=size
            )
        model = call.spec.arguments_model
        if model is not None:
            try:
                model.model_validate(call.arguments)
            except ValidationError as exc:
                raise InvalidArguments(_pydantic_message(exc)) from None
            return
        validator = self._validator(call.spec)
        error = next(iter(sorted(validator.iter_errors(call.arguments), key=lambda e: list(e.path))), None)
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
            raise InvalidArguments(f"argument '{where}': {error.message[:300]}")

    def _validator(self, spec: ToolSpec) -> Any:
        key = id(spec.input_schema)
        cached = self._validators.get(spec.name)
        if cached is None or cached[0] != key:
            # only tools without an argument model (upstream ones) need it, and jsonschema with it
            from gateway.tools.upstream_schema import SchemaRefused, upstream_validator

            try:
                cached = (key, upstream_validator(spec.input_schema))
            except SchemaRefused as exc:
                raise InvalidArguments(f"tool {spec.name!r}: its input schema is refused ({exc}); not called") from None
            self._validators[spec.name] = cached
        return cached[1]


def _pydantic_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown argument"
    return f"argument '{where}': {message}"


# --- describe -------------------------------------------------------------------------------------


class Situate(Protocol):
    """Fills in where the call happens: ``call.workspace`` (a worker's task worktree, or the workspace),
    ``call.task`` and ``call.intent`` for the policy, and ``call.trace_id`` (the task's or the session's)."""

    def __call__(self, call: Call) -> None: ...


INLINE_DESCRIPTION_CHARS = 2048  # shell text shorter than this is described on the event loop


class Describe:
    """Arguments become Effects. Built-in tools can act only inside the workspace, so a path argument
    that leaves it is refused here, before the policy is asked about something that could never run.

    A long shell command is described in a worker thread, bounded by ``deadline_s``: one that takes longer
    is refused rather than holding up the event loop, and every other agent with it. A short one (most of
    them) is described in place: the analysis is linear and bounded, so it cannot take long, and the
    thread hop would cost more than the description."""

    def __init__(self, situate: Situate, deadline_s: float = 0.5) -> None:
        self.situate = situate
        self.deadline_s = deadline_s

    async def __call__(self, call: Call) -> None:
        assert call.spec is not None and call.principal is not None
        self.situate(call)
        assert call.workspace is not None
        if call.spec.provider != "upstream" and not call.spec.provider.startswith("upstream:"):
            for name, role in call.spec.argument_roles.items():
                if role in ("read", "write", "delete"):
                    value = call.arguments.get(name)
                    for raw in value if isinstance(value, list) else [value]:
                        if isinstance(raw, str):
                            call.workspace.resolve(raw)
        commands = [call.arguments.get(k) for k, role in call.spec.argument_roles.items() if role == "command"]
        if sum(len(c) for c in commands if isinstance(c, str)) < INLINE_DESCRIPTION_CHARS:
            call.effects = describe(call.spec, call.arguments, call.workspace)
            return
        spec, arguments, workspace = call.spec, call.arguments, call.workspace
        with anyio.move_on_after(self.deadline_s) as scope:
            call.effects = await anyio.to_thread.run_sync(
                lambda: describe(spec, arguments, workspace), abandon_on_cancel=True
            )
        if scope.cancelled_caught:
            raise DecisionDeadline(f"the command could not be analysed within {self.deadline_s:g} s; it is refused")


# --- decide ---------------------------------------------------------------------------------------


class Decide:
    """Asks the policy about the call's input document; a deny stops the call here.

    Acting on the tier is the next stage's business: deciding is kept apart from enforcing.
    """

    def __init__(self, engine: PolicyEngine) -> None:
        self.engine = engine

    async def __call__(self, call: Call) -> None:
        call.policy_input = policy_input(call)
        call.decision = await self.engine.decide(call.policy_input)
        if call.decision.action == "deny":
            raise Denied("; ".join(call.decision.reasons) or "the policy denied this call", rules=call.decision.rules)


class Judged:
    """The last stage of a decision without a run (``gateway check``, verification commands):
    the call is recorded as allowed or asked about; a denial stopped it at Decide."""

    async def __call__(self, call: Call) -> None:
        assert call.decision is not None
        call.outcome = "allowed" if call.decision.action == "allow" else "asked"


# a call decided, not run, and recorded (Gateway.judge_call): what the gateway asks before it acts itself
Judge = Callable[[Call], Awaitable[Call]]


class HookVerdict:
    """The last stage of the Claude Code hook's judge. Claude Code runs the tool itself after the answer,
    so what ActOnTier does before a run happens here, before answering.

    A call the policy asks about is held for a person as a pending gateway approval (the hook answers
    "deny" naming it): Claude Code's own "ask" would let whoever holds its keyboard, or a permissive
    permission mode, run the call unrecorded. Once a person approves, the same call (same agent, role,
    tool, arguments, on the same hook) is allowed once; an approval given to the call on MCP, where the
    gateway runs it in its sandbox, is not (Claude Code runs it unconfined). An allowed tier-2 call gets its
    checkpoint first."""

    def __init__(self, approvals: Approvals, checkpoints: Checkpoints) -> None:
        self.approvals = approvals
        self.checkpoints = checkpoints

    async def __call__(self, call: Call) -> None:
        assert call.decision is not None and call.principal is not None
        if call.decision.action == "ask":
            site = call_site(call)
            key = approval_key(call, site)
            if not take_approval(self.approvals, call, key, site):
                hold_for_approval(self.approvals, call, key, site)
                return
        if call.effects is not None and call.decision.tier >= 2:
            call.safeguard = await take_safeguard(self.checkpoints, call)
        call.outcome = "allowed"


def policy_input(call: Call) -> JSONObject:
    assert call.principal is not None and call.effects is not None and call.workspace is not None
    return input_document(
        kind=INPUT_KINDS[call.method],
        principal=call.principal,
        tool=tool_facts(call.spec, call.tool, call.pin_facts),
        arguments=call.arguments,
        effects=call.effects,
        workspace=str(call.workspace.root),
        trace_id=call.trace_id,
        task=call.task,
        intent=call.intent,
        sandbox=call.confinement.describe() if call.confinement is not None else None,
        git_hooks=hooks_path(call.workspace.root),
    )


# --- act on tier ----------------------------------------------------------------------------------


class ActOnTier:
    """Tier 1 runs; tier 2 takes a rollback point first; a call the policy asks about waits for a human.

    The asking is ``Approvals``' business (see gateway/approvals.py for the three ways to ask); this
    stage picks the way for the call at hand and acts on the answer.
    """

    def __init__(
        self,
        approvals: Approvals,
        checkpoints: Checkpoints,
        roles: RoleSet,
        seal: RequestStateSeal,
        config: ApprovalsConfig,
    ) -> None:
        self.approvals = approvals
        self.checkpoints = checkpoints
        self.roles = roles
        self.seal = seal
        self.config = config

    async def __call__(self, call: Call) -> None:
        assert call.decision is not None and call.principal is not None and call.workspace is not None
        if call.decision.action == "ask":
            await self._ask(call)
            if call.result is not None:
                return
        if call.decision.tier >= 2:
            call.safeguard = await take_safeguard(self.checkpoints, call)

    async def _ask(self, call: Call) -> None:
        import mcp_types as mt

        assert call.principal is not None and call.decision is not None
        site = call_site(call)
        key = approval_key(call, site)
        if take_approval(self.approvals, call, key, site):
            return
        origin = call.origin
        answer: mt.ElicitResult | None = None
        interactive = self._interactive(call)
        if interactive and origin.input_responses and "approval" in origin.input_responses:
            if not self.seal.opens(key, origin.request_state):
                raise Denied("the approval answer does not belong to this call (request_state mismatch)")
            answer = mt.ElicitResult.model_validate(origin.input_responses["approval"])
        elif interactive and self._elicits(call):
            if origin.elicitation == "input_required":
                request = mt.ElicitRequest(
                    params=mt.ElicitRequestFormParams(message=approval_message(call), requested_schema=APPROVAL_SCHEMA)
                )
                call.result = mt.InputRequiredResult(
                    input_requests={"approval": request}, request_state=self.seal.seal(key)
                )
                call.outcome = "asked"
                return
            answer = await self._push(call)
        if answer is not None and answer.action != "cancel":
            approve = answer.action == "accept" and (answer.content or {}).get("approve") is True
            by = f"elicitation:{origin.client_name or 'client'}"
            approval_id = self.approvals.record_answer(
                key, call.principal, call.tool, call.arguments, site, (approve, by), call.call_id
            )
            call.detail["approval"] = {"id": approval_id, "answer": "approved" if approve else "denied", "by": by}
            if not approve:
                raise Denied(f"the user declined this call (approval {approval_id})", approval_id=approval_id)
            return
        # no elicitation, a headless client, or a cancelled one: wait for a person out of band
        pending = hold_for_approval(self.approvals, call, key, site)
        call.result = pending_result(call, pending)

    def _interactive(self, call: Call) -> bool:
        """Whether the caller's client is a person (gateway.yaml says so): else its answers approve nothing."""
        assert call.principal is not None
        return call.principal.role in self.config.interactive_roles

    def _elicits(self, call: Call) -> bool:
        assert call.principal is not None
        origin = call.origin
        if origin.elicitation == "none" or self.roles[call.principal.role].approvals == "pending":
            return False
        client = origin.client_name or ""
        return not any(fnmatch.fnmatchcase(client, pattern) for pattern in self.config.pending_clients)

    async def _push(self, call: Call) -> mt.ElicitResult | None:
        """Push the question and keep the call alive with progress until the person answers."""
        assert call.origin.elicit is not None
        progress = call.origin.progress or _no_progress
        answer: mt.ElicitResult | None = None

        async def keepalive() -> None:
            waited = 0.0
            while True:
                await anyio.sleep(self.config.keepalive_s)
                waited += self.config.keepalive_s
                await progress(waited, None, f"waiting for a human to approve ({waited:.0f}s)")

        async with anyio.create_task_group() as tg:
            tg.start_soon(keepalive)
            with anyio.move_on_after(self.config.elicit_timeout_s):
                answer = await call.origin.elicit(approval_message(call), APPROVAL_SCHEMA)
            tg.cancel_scope.cancel()
        return answer


def approval_key(call: Call, site: CallSite) -> str:
    """What a person's approval binds to: the call, where it runs, and for an upstream tool the definition it
    was judged on (its pin digest), so an approval given before the upstream changed the tool never runs the
    changed one."""
    assert call.principal is not None
    definition = call.pin.digest if call.pin is not None else None
    return call_key(call.principal, call.tool, call.arguments, site, definition)


def call_site(call: Call) -> CallSite:
    """Where a call runs, as an approval binds to it: the channel it came by and the confinement it runs in
    (with the egress its decision grants). Claude Code runs a hooked call itself, outside any sandbox."""
    if call.kind == "hook":
        channel = "hook:http" if call.origin.transport == "http" else "hook:command"
        return CallSite(channel, {"runs": "claude-code", "confined": False})
    channel = f"mcp:{call.method}" if call.kind == "call" else call.kind
    confinement = granted_confinement(call)
    upstream = call.spec is not None and call.spec.provider.startswith("upstream")
    if confinement is None:
        return CallSite(channel, {"runs": "upstream" if upstream else "gateway", "confined": False})
    return CallSite(channel, {"runs": "upstream-sandbox" if upstream else "sandbox", **confinement.binding()})


def granted_confinement(call: Call) -> Confinement | None:
    """The call's confinement with the network egress its decision (or the person who approved it) allowed:
    the hosts its effects name, with the port a URL named (see gateway/hosts.py), and only those."""
    confinement = call.confinement
    if confinement is not None and call.effects is not None and call.effects.network:
        # "listen:PORT" says the command serves; it names no host to reach
        return confinement.allowing(n.endpoint for n in call.effects.network if not n.host.startswith("listen:"))
    return confinement


def take_approval(approvals: Approvals, call: Call, key: str, site: CallSite) -> bool:
    """True when a person approved exactly this call where it runs (the approval is used up); Denied when a
    person denied it; False when no answer waits. An approval of the same call for another channel or
    confinement is not used: it is named, with the reason, in the call's ledger row."""
    assert call.principal is not None
    settled = approvals.consume(key, call.call_id, site)
    if settled is None:
        elsewhere = approvals.elsewhere(call.principal, call.tool, call.arguments, key)
        if elsewhere:
            call.detail["approvals_not_used"] = [
                {**other, "why": f"approved for {other['where']}; this call: {site.summary()}"} for other in elsewhere
            ]
        return False
    answer, approval_id = settled
    call.detail["approval"] = {"id": approval_id, "answer": answer}
    if answer == "denied":
        raise Denied(f"a person denied this call (approval {approval_id})", approval_id=approval_id)
    return True


def hold_for_approval(approvals: Approvals, call: Call, key: str, site: CallSite) -> JSONObject:
    """A pending approval for the call (an open one for the same key is reused); the call is "asked"."""
    assert call.principal is not None and call.decision is not None
    about: JSONObject = {
        "call_id": call.call_id,
        "trace_id": call.trace_id,
        "decision": call.decision.model_dump(),
        "effects": call.effects.model_dump() if call.effects else None,
        "definition": call.pin.digest if call.pin is not None else None,
    }
    if call.detail.get("approvals_not_used"):
        about["approvals_not_used"] = call.detail["approvals_not_used"]
    pending = approvals.request(key, call.principal, call.tool, call.arguments, about, site)
    call.detail["approval"] = {
        "id": pending["id"],
        "answer": "pending",
        "expires": pending["expires"],
        "channel": site.channel,
    }
    call.outcome = "asked"
    return pending


def not_used_note(call: Call) -> str:
    """What the agent is told about approvals of this call given for another channel or confinement."""
    unused = call.detail.get("approvals_not_used") or []
    return "".join(f" Approval {u['id']} does not apply here: {u['why']}." for u in unused)


async def take_safeguard(checkpoints: Checkpoints, call: Call) -> JSONObject:
    """Tier 2's safeguard: a checkpoint of what the call may change, taken before it runs."""
    assert call.effects is not None and call.workspace is not None
    paths = [*call.effects.writes, *call.effects.creates, *call.effects.deletes, *call.effects.recursive_deletes]
    workspace = call.workspace
    own = [workspace.display(p) for p in workspace.protected if workspace.contains(p)]
    return await anyio.to_thread.run_sync(lambda: checkpoints.take(workspace.root, call.call_id, paths, exclude=own))


def approval_message(call: Call) -> str:
    assert call.principal is not None and call.decision is not None
    reasons = "; ".join(call.decision.reasons) or "the policy asks for a human"
    arguments = json.dumps(call.arguments, default=str)
    if len(arguments) > 600:
        arguments = arguments[:600] + "..."
    return (
        f"Approve tier-{call.decision.tier} call {call.tool} by {call.principal.agent} ({call.principal.role})?\n"
        f"Why it needs you: {reasons}\nArguments: {arguments}"
    )


def pending_result(call: Call, pending: JSONObject) -> mt.CallToolResult:
    """Not an error (so clients do not count it as a failure), but unmistakably not run."""
    import mcp_types as mt

    assert call.decision is not None
    approval_id = pending["id"]
    structured = {
        "status": "approval_pending",
        "approval_id": approval_id,
        "tier": call.decision.tier,
        "reasons": call.decision.reasons,
        "rules": call.decision.rules,
        "expires": pending["expires"],
        "next_step": f"a person runs 'gateway approvals approve {approval_id}' (or uses the review page); "
        "then retry exactly the same call with the same arguments",
        "call_id": call.call_id,
    }
    if call.detail.get("approvals_not_used"):
        structured["approvals_not_used"] = call.detail["approvals_not_used"]
    text = (
        f"NOT RUN: this call needs a human's approval (tier {call.decision.tier}).\n"
        f"Reasons: {'; '.join(call.decision.reasons)}\n"
        f"Approval id: {approval_id} (expires {pending['expires']}).{not_used_note(call)}\n"
        f"Next step: {structured['next_step']}."
    )
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], structured_content=structured)


# --- record intent, execute -----------------------------------------------------------------------


class RecordIntent:
    """The write-ahead record: committed before the side effect, or the call does not run.

    A tier-1 call of a read-only tool (declared so by the gateway or the operator) has no side effect to
    explain after a crash, so its one row is the final one, still committed before the answer is sent."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def __call__(self, call: Call) -> None:
        if call.spec is not None and call.spec.read_only and call.decision is not None and call.decision.tier == 1:
            return
        self.ledger.append(ledger_fields(call, "started"))
        call.intent_recorded = True


class Execute:
    async def __call__(self, call: Call) -> None:
        assert call.spec is not None and call.principal is not None and call.workspace is not None
        progress = call.origin.progress or _no_progress
        confinement = granted_confinement(call)
        invocation = ToolInvocation(
            arguments=call.arguments,
            workspace=call.workspace,
            progress=progress,
            principal=call.principal,
            trace_id=call.trace_id,
            input_responses=call.origin.input_responses,
            request_state=call.origin.request_state,
            confinement=confinement,
        )
        try:
            call.result = await call.spec.handler(invocation)
        except GatewayError:
            raise
        except OSError as exc:
            raise ToolFailed(f"{call.spec.name} failed: {exc.strerror or exc}") from None
        # a CallToolResult, or an upstream's answer passed on as sent (Forwarded): both say is_error
        call.outcome = "error" if getattr(call.result, "is_error", False) is True else "ok"
        if call.safeguard is not None and call.method == "tools/call":
            call.result = with_checkpoint(
                call.result, call.safeguard, structured=not call.spec.provider.startswith("upstream")
            )


CHECKPOINT_META = "io.github.mcp-policy-gateway/checkpoint"


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


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


# --- record ---------------------------------------------------------------------------------------


def ledger_fields(call: Call, outcome: Outcome) -> JSONObject:
    detail = dict(call.detail)
    if call.error is not None:
        detail["error"] = call.error.as_dict()
    if call.safeguard is not None:
        detail["safeguard"] = call.safeguard
    if call.confinement is not None:
        c = call.confinement
        detail["sandbox"] = {"mode": c.mode, "writable": [str(p) for p in c.writable]}
    if call.method != "tools/call":
        detail["method"] = call.method
    if outcome == "started":
        detail["process"] = this_process()  # whose call it is, if the process dies before the call ends
    else:
        detail["duration_ms"] = round((time.perf_counter() - call.started) * 1000, 3)
    return {
        "kind": call.kind,
        "call_id": call.call_id,
        "trace_id": call.trace_id,
        "span_id": call.span_id,
        "principal": call.principal.model_dump() if call.principal else None,
        "tool": call.tool,
        "arguments_digest": digest(call.arguments),
        "effects": call.effects.model_dump() if call.effects else None,
        "decision": call.decision.model_dump() if call.decision else None,
        "outcome": outcome,
        "intent_id": call.intent["id"] if call.intent else None,
        "detail": detail,
    }


class Record:
    """The final ledger event of a call; runs for every call, refused or not.

    With ``telemetry``, the same call also gets its decision log entry (``detail.decision_id`` in the
    ledger event) and its OpenTelemetry span (the event's ``span_id``)."""

    def __init__(self, ledger: Ledger, telemetry: Telemetry | None = None) -> None:
        self.ledger = ledger
        self.telemetry = telemetry

    async def __call__(self, call: Call) -> None:
        if self.telemetry is None:
            self._append(call)
            return
        with self.telemetry.recording(call):
            self._append(call)

    def _append(self, call: Call) -> None:
        outcome: Outcome = call.outcome or ("error" if call.error else "ok")
        try:
            self.ledger.append(ledger_fields(call, outcome))
        except Exception:
            log.exception("could not record the outcome", call_id=call.call_id, outcome=outcome)
            if not call.intent_recorded:
                # nothing ran, but the refusal is not recorded: say so rather than pretend
                call.stop(ToolFailed("the gateway could not record this call; nothing was run"))
