"""Logging, spans and the decision log.

Logging: structlog, JSON lines on stderr (stdout belongs to the stdio transport). During a call the
pipeline binds ``trace_id``, ``span_id`` and ``call_id`` into structlog's contextvars, so every log line
a stage writes names its call.

Spans: one OpenTelemetry span per tools/call, following the MCP semantic conventions
("tools/call fs_read", SpanKind.SERVER, ``mcp.method.name``, ``gen_ai.tool.name``, ``gen_ai.operation.name``,
``mcp.session.id``, ``error.type``) plus ``gateway.*`` attributes. The span's trace id is the gateway's
trace (the task's or the session's, as in ``gateway trace show``) and its span id is the call's
``span_id`` in the ledger, so a collector's trace view and the ledger line up. Spans are exported over
OTLP/HTTP only when ``telemetry.otlp_endpoint`` (gateway.yaml) or OTEL_EXPORTER_OTLP_ENDPOINT is set;
otherwise there is no tracer: no SDK provider, no exporter, no network, and OpenTelemetry is not even
imported (a command hook's cold start would pay for it).

The gateway keeps its own TracerProvider rather than the global one, so the MCP SDK's own server-span
middleware (which uses the global provider) stays a no-op and each call is not traced twice.

    configure_logging("info")
    telemetry = Telemetry.from_config(config)          # runtime.Gateway does this
    with telemetry.recording(call):                    # the pipeline's record stage
        ledger.append(ledger_fields(call, outcome))
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO, cast

import structlog

from gateway import __version__
from gateway.config import GatewayConfig, TelemetryConfig, expand_env
from gateway.decision_log import DecisionLog, mask_text
from gateway.judge.call import verdict
from gateway.policy.input import INPUT_VERSION, tool_facts
from gateway.types import JSONObject

if TYPE_CHECKING:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from gateway.judge.call import Call
    from gateway.metrics import Metrics

log = structlog.get_logger("gateway.telemetry")

SERVICE_NAME = "mcp-gateway"
TRACES_PATH = "/v1/traces"
_TRANSPORTS = {"stdio": "pipe", "http": "tcp"}  # network.transport, as the MCP conventions name them

# the (trace id, span id) the next span must take: the call's own ids, set just around start_span
_CALL_IDS: ContextVar[tuple[int, int] | None] = ContextVar("gateway_call_ids", default=None)


QUIET_LIBRARIES = ("httpx", "httpx2", "httpcore", "httpcore2")


class CurrentStderr:
    """sys.stderr as it is when a line is written, not when logging was configured: whoever configured it
    last (a command run in-process, a test harness) may have swapped or closed the stream since."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(message)s")
    # the HTTP client libraries log every request at INFO: a line per proxied call, on the hot path
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(numeric if numeric <= logging.DEBUG else max(numeric, logging.WARNING))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, CurrentStderr())),  # write and flush suffice
        cache_logger_on_first_use=True,
    )


def otlp_endpoint(config: TelemetryConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """Where spans go: the traces URL from gateway.yaml, else "env" when the standard OTEL_* variables name
    an endpoint (the exporter reads them itself), else None: export is off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    if config.otlp_endpoint:
        url = config.otlp_endpoint.rstrip("/")
        return url if url.endswith(TRACES_PATH) else url + TRACES_PATH
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return "env"
    return None


def _hex_ids(trace_id: str, span_id: str) -> tuple[int, int] | None:
    try:
        ids = int(trace_id, 16), int(span_id, 16)
    except ValueError:
        return None
    if len(trace_id) != 32 or len(span_id) != 16 or not all(ids):
        return None
    return ids


def _id_generator() -> Any:
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class CallIds(RandomIdGenerator):
        """Random ids, except for a call's span: that takes the gateway's trace id and the call's span id."""

        def generate_trace_id(self) -> int:
            ids = _CALL_IDS.get()
            return ids[0] if ids else super().generate_trace_id()

        def generate_span_id(self) -> int:
            ids = _CALL_IDS.get()
            return ids[1] if ids else super().generate_span_id()

    return CallIds()


class Telemetry:
    """The pipeline's telemetry: a span and a decision log entry per call, and its metrics when enabled."""

    def __init__(
        self,
        config: TelemetryConfig,
        decisions: DecisionLog,
        *,
        environ: Mapping[str, str] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.config = config
        self.decisions = decisions
        self.metrics = metrics  # Prometheus (gateway/metrics.py), when gateway.yaml enables it
        self.provider: TracerProvider | None = None
        self.tracer: trace.Tracer | None = None  # made with the provider, when there is an exporter
        self.exporters: list[SpanExporter] = []
        self.endpoint = otlp_endpoint(config, environ)
        if self.endpoint is not None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            headers = {k: expand_env(v) for k, v in config.otlp_headers.items()} or None
            exporter = OTLPSpanExporter(
                endpoint=None if self.endpoint == "env" else self.endpoint,
                headers=headers,
                timeout=config.otlp_timeout_s,
            )
            self.add_exporter(exporter, batch=True)
            log.info("exporting spans over OTLP/HTTP", endpoint=exporter._endpoint)

    @classmethod
    def from_config(cls, config: GatewayConfig, environ: Mapping[str, str] | None = None) -> Telemetry:
        labels = {
            "id": str(uuid.uuid4()),  # this gateway process, as OPA labels its instances
            "app": SERVICE_NAME,
            "version": __version__,
            "policy_engine": config.policy.engine,
            "input_version": INPUT_VERSION,
        }
        path = config.decision_log_path if config.telemetry.decision_log else None
        metrics = None
        if config.metrics.enabled:
            from gateway.metrics import Metrics

            metrics = Metrics()
        return cls(config.telemetry, DecisionLog(path, labels), environ=environ, metrics=metrics)

    @property
    def enabled(self) -> bool:
        """Whether spans are recorded at all (an exporter is configured)."""
        return self.provider is not None

    def add_exporter(self, exporter: SpanExporter, *, batch: bool = False) -> None:
        """Export spans to ``exporter`` too (tests: an InMemorySpanExporter, exported synchronously)."""
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        if self.provider is None:
            attributes: dict[str, Any] = {"service.version": __version__}
            name = self.config.service_name or os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME
            attributes["service.name"] = name
            self.provider = TracerProvider(resource=Resource.create(attributes), id_generator=_id_generator())
            self.tracer = self.provider.get_tracer("mcp-gateway", __version__)
        self.provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
        self.exporters.append(exporter)

    def flush(self, timeout_s: float = 5.0) -> None:
        """Write the buffered decision log entries and export the pending spans (a gateway stopping)."""
        self.decisions.flush()
        if self.provider is not None:
            self.provider.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        if self.provider is not None:
            self.provider.shutdown()

    # --- per call ---------------------------------------------------------------------------------

    @contextmanager
    def recording(self, call: Call) -> Iterator[None]:
        """Around the final ledger write: log the decision, then a span covering the whole call.

        Sets ``call.detail["decision_id"]`` before the ledger event is written, so the ledger names
        the decision log entry."""
        self._log_decision(call)
        span: trace.Span | None = None
        try:
            span = self._start(call)
        except Exception:  # telemetry never keeps a call from its ledger event
            log.exception("could not start the call's span", call_id=call.call_id)
        try:
            yield
        finally:
            if span is not None:
                try:
                    self._end(span, call)
                except Exception:
                    log.exception("could not end the call's span", call_id=call.call_id)
            if self.metrics is not None:
                try:
                    self.metrics.observe(call)
                except Exception:
                    log.exception("could not count the call", call_id=call.call_id)

    def _log_decision(self, call: Call) -> None:
        decision = verdict(call)
        if decision is None:
            return  # nothing was decided: the call went on, or was cancelled, before anything stopped it
        try:
            entry = self.decisions.record(
                decision_input(call),
                decision.model_dump(),
                trace_id=call.trace_id,
                span_id=call.span_id,
                call_id=call.call_id,
            )
        except Exception:
            log.exception("could not write the decision log", call_id=call.call_id)
            return
        call.detail["decision_id"] = entry["decision_id"]

    def _start(self, call: Call) -> trace.Span | None:
        if self.tracer is None:
            return None
        from opentelemetry.context import Context
        from opentelemetry.trace import SpanKind

        # the span starts when the call did: it is created at the end, once the trace (task or session) is known
        start_ns = time.time_ns() - int((time.perf_counter() - call.started) * 1e9)
        resolved = call.spec is not None  # an unknown name is not a low-cardinality span name
        token = _CALL_IDS.set(_hex_ids(call.trace_id, call.span_id))
        try:
            span = self.tracer.start_span(
                f"tools/call {call.tool}" if resolved else "tools/call",
                context=Context(),  # a root span of the gateway's trace, never a child of some ambient span
                kind=SpanKind.SERVER,
                attributes=self._start_attributes(call),
                start_time=start_ns,
            )
        finally:
            _CALL_IDS.reset(token)
        context = span.get_span_context()
        if context.is_valid and format(context.span_id, "016x") != call.span_id:
            call.span_id = format(context.span_id, "016x")  # the ledger names the span that was exported
        return span

    @staticmethod
    def _start_attributes(call: Call) -> dict[str, Any]:
        origin = call.origin
        attributes: dict[str, Any] = {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool[:128],
            "gateway.call.id": call.call_id,
        }
        if origin.transport in _TRANSPORTS:
            attributes["network.transport"] = _TRANSPORTS[origin.transport]
            attributes["mcp.protocol.version"] = origin.protocol_version
        # over HTTP without a session the gateway keys the session by the credential: never export that
        if origin.session_id and origin.session_id != origin.token:
            attributes["mcp.session.id"] = origin.session_id
        if origin.client_name:
            attributes["gateway.client.name"] = origin.client_name
        return attributes

    @staticmethod
    def _end(span: trace.Span, call: Call) -> None:
        from opentelemetry.trace import StatusCode

        attributes: dict[str, Any] = {"gateway.outcome": call.outcome or ("error" if call.error else "ok")}
        if call.spec is not None:
            attributes["gateway.tool.provider"] = str(call.spec.provider)
        if call.principal is not None:
            attributes["gateway.principal.agent"] = call.principal.agent
            attributes["gateway.principal.role"] = call.principal.role
        task = (call.task or {}).get("id") or (call.principal.task if call.principal else None)
        if task:
            attributes["gateway.task.id"] = task
        if call.intent and call.intent.get("id"):
            attributes["gateway.intent.id"] = call.intent["id"]
        if call.decision is not None:
            attributes["gateway.decision.action"] = call.decision.action
            attributes["gateway.decision.tier"] = call.decision.tier
            attributes["gateway.decision.rules"] = list(call.decision.rules)
            if call.decision.revision:
                attributes["gateway.policy.revision"] = call.decision.revision
        if "decision_id" in call.detail:
            attributes["gateway.decision.id"] = call.detail["decision_id"]
        approval = call.detail.get("approval")
        if isinstance(approval, dict) and approval.get("id"):
            attributes["gateway.approval.id"] = str(approval["id"])
            attributes["gateway.approval.answer"] = str(approval.get("answer"))
        if call.safeguard is not None and call.safeguard.get("id"):
            attributes["gateway.safeguard.id"] = str(call.safeguard["id"])
        if call.error is not None:
            attributes["error.type"] = call.error.code
            span.set_status(StatusCode.ERROR, mask_text(f"{call.error.code}: {call.error.message}"[:300]))
        elif getattr(call.result, "is_error", False):  # a CallToolResult with isError
            attributes["error.type"] = "tool_error"  # the tool ran and answered an error (MCP conventions)
            span.set_status(StatusCode.ERROR)
        span.set_attributes(attributes)
        span.end()


def decision_input(call: Call) -> JSONObject:
    """The policy input document of the call; for a call refused before the policy, the facts known so far
    in the same shape (``effects`` None when the arguments were never described)."""
    if call.policy_input is not None:  # what the policy judged (not rebuilt: the call's labels rose since)
        return call.policy_input
    if call.principal is not None and call.effects is not None and call.workspace is not None:
        from gateway.judge.decide import policy_input

        return policy_input(call)
    return {
        "version": INPUT_VERSION,
        "principal": call.principal.model_dump() if call.principal else None,
        "tool": tool_facts(call.spec, call.tool, call.pin_facts),
        "arguments": call.arguments,
        "effects": call.effects.model_dump() if call.effects else None,
        "task": call.task,
        "intent": call.intent,
        "context": {
            "workspace": str(call.workspace.root) if call.workspace else None,
            "trace_id": call.trace_id,
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }


__all__ = ["Telemetry", "configure_logging", "decision_input", "otlp_endpoint"]
