"""Telemetry: one OpenTelemetry span per call (MCP semantic conventions), joined to the ledger and to an
OPA-style decision log entry with secrets masked; OTLP export only when configured."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import structlog
from conftest import inproc_client, ledger_rows, reconfigure, text_of, token
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from gateway import decision_log
from gateway.config import TelemetryConfig
from gateway.decision_log import mask_text, read_entries, redact
from gateway.judge.call import Call
from gateway.origin import Origin
from gateway.telemetry import Telemetry, otlp_endpoint

pytestmark = pytest.mark.anyio

OTEL_ENV = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture(autouse=True)
def no_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def spans(gateway: Any) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    gateway.telemetry.add_exporter(exporter)
    return exporter


def hexid(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def only(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = [span for span in spans.get_finished_spans() if span.name == name]
    assert len(found) == 1, [span.name for span in spans.get_finished_spans()]
    return found[0]


@pytest.fixture
def debug_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """The decision log's debug lines, whatever logging an earlier test in this worker configured: the gateway
    caches each logger on first use (with the level of that moment), so a cached one at "warning" would drop
    them. A fresh, uncached logger at debug for the test's length; the configuration is restored after."""
    previous = structlog.get_config()
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG), cache_logger_on_first_use=False
    )
    monkeypatch.setattr(decision_log, "log", structlog.get_logger("gateway.decisions"))
    try:
        with structlog.testing.capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
            yield logs
    finally:
        structlog.configure(
            wrapper_class=previous["wrapper_class"], cache_logger_on_first_use=previous["cache_logger_on_first_use"]
        )


def decisions(config: Any) -> list[dict[str, Any]]:
    return read_entries(config.state_dir / "decisions.jsonl")


async def test_span_follows_mcp_conventions_and_joins_the_ledger(
    gateway: Any, config: Any, spans: InMemorySpanExporter, debug_logs: list[dict[str, Any]]
) -> None:
    bearer = token(config, "developer", agent="dev-1")
    async with inproc_client(gateway, bearer) as client:
        result = await client.call_tool("fs_read", {"path": "README.md"})
    assert not result.is_error, text_of(result)

    span = only(spans, "tools/call fs_read")
    attributes = dict(span.attributes or {})
    assert span.kind is SpanKind.SERVER
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "fs_read"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["mcp.session.id"]
    assert attributes["gateway.decision.action"] == "allow"
    assert attributes["gateway.decision.tier"] == 1
    assert "tiers.read" in attributes["gateway.decision.rules"]
    assert attributes["gateway.principal.role"] == "developer"
    assert attributes["gateway.principal.agent"] == "dev-1"
    assert attributes["gateway.outcome"] == "ok"
    assert "error.type" not in attributes
    assert span.status.status_code is StatusCode.UNSET
    assert span.parent is None
    assert span.start_time is not None and span.end_time is not None and span.start_time < span.end_time

    # the span is the ledger's: same trace (the session's, as `gateway trace show` has it), same span id
    event = ledger_rows(gateway)[-1]
    assert event.tool == "fs_read" and event.outcome == "ok"
    assert hexid(span.context.trace_id, 32) == event.trace_id
    assert hexid(span.context.span_id, 16) == event.span_id
    assert attributes["gateway.call.id"] == event.call_id
    # a tier-1 read: its one ledger row is the final one (no write-ahead row: nothing to explain after a crash)
    assert [e.span_id for e in ledger_rows(gateway) if e.call_id == event.call_id] == [event.span_id]

    # and the decision log entry's
    (entry,) = decisions(config)
    assert event.detail["decision_id"] == entry["decision_id"] == attributes["gateway.decision.id"]
    assert (entry["trace_id"], entry["span_id"], entry["call_id"]) == (event.trace_id, event.span_id, event.call_id)
    # each names the policy revision that decided: the digest of the bundle's sources and data, as OPA's bundles do
    revision = gateway.engine.revision()
    assert revision.startswith("sha256:") and len(revision) == 71
    assert event.decision["revision"] == entry["result"]["revision"] == revision
    assert entry["bundles"] == {"gateway": {"revision": revision}} and attributes["gateway.policy.revision"] == revision

    # log lines written during the call carry the call's trace and span
    (logged,) = [line for line in debug_logs if line["event"] == "decision"]
    assert logged["log_level"] == "debug"
    assert (logged["trace_id"], logged["span_id"], logged["call_id"]) == (event.trace_id, event.span_id, event.call_id)
    assert logged["decision"]["decision_id"] == entry["decision_id"]


async def test_denied_call_has_error_type_and_a_masked_decision_entry(
    gateway: Any, config: Any, spans: InMemorySpanExporter
) -> None:
    developer = token(config, "developer", agent="dev-1")
    worker = token(config, "worker", agent="w-1")  # no claim on a task: the policy denies every write
    async with inproc_client(gateway, developer) as client:
        content = f"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\nregion = eu-west-1\n"
        allowed = await client.call_tool("fs_write", {"path": "deploy.env.txt", "content": content})
    async with inproc_client(gateway, worker) as client:
        denied = await client.call_tool("fs_write", {"path": "notes.txt", "content": "db password=hunter2-secret\n"})
    assert not allowed.is_error, text_of(allowed)
    assert denied.is_error and "denied" in text_of(denied)

    span = spans.get_finished_spans()[-1]
    attributes = dict(span.attributes or {})
    assert span.name == "tools/call fs_write"
    assert attributes["error.type"] == "denied"
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["gateway.decision.action"] == "deny"
    assert "paths.no_claim" in attributes["gateway.decision.rules"]
    assert attributes["gateway.outcome"] == "denied"
    event = ledger_rows(gateway)[-1]
    assert event.outcome == "denied" and hexid(span.context.span_id, 16) == event.span_id

    text = (config.state_dir / "decisions.jsonl").read_text()
    for secret in (AWS_SECRET, "AKIAIOSFODNN7EXAMPLE", "hunter2-secret", developer, worker):
        assert secret not in text
    first, second = decisions(config)
    for entry in (first, second):
        assert set(entry) >= {"decision_id", "timestamp", "path", "input", "result", "labels", "trace_id", "span_id"}
        assert entry["path"] == "gateway/decision"
        assert entry["timestamp"].endswith("Z")
        assert entry["labels"]["app"] == "mcp-gateway" and entry["labels"]["version"]
        assert entry["input"]["version"] == 2 and entry["input"]["tool"]["name"] == "fs_write"
        assert len(entry["trace_id"]) == 32 and len(entry["span_id"]) == 16
    assert first["result"]["action"] == "allow"
    assert first["input"]["arguments"]["content"] == (
        "AWS_ACCESS_KEY_ID=***\nAWS_SECRET_ACCESS_KEY=***\nregion = eu-west-1\n"
    )
    # the flow session names the credential by its id (jti:<jti>): readable, while the token itself never is
    assert first["masked"] == ["/input/arguments/content"]
    developer_jti = json.loads(base64.urlsafe_b64decode(developer.split(".")[1] + "=="))["jti"]
    assert first["input"]["flow"]["session"] == f"jti:{developer_jti}"
    assert second["result"] == {
        "action": "deny",
        "tier": event.decision["tier"],
        "reasons": event.decision["reasons"],
        "rules": event.decision["rules"],
        "revision": event.decision["revision"],
    }
    assert second["input"]["arguments"]["content"] == "db password=***\n"
    assert second["input"]["principal"]["role"] == "worker"
    assert event.detail["decision_id"] == second["decision_id"]


async def test_refusals_before_the_policy_are_logged_as_gateway_denials(
    gateway: Any, config: Any, spans: InMemorySpanExporter
) -> None:
    planner = token(config, "planner")
    async with inproc_client(gateway, planner) as client:
        hidden = await client.call_tool("shell_run", {"command": "export API_TOKEN=s3cr3t-value; make"})
    async with inproc_client(gateway, "not-a-token") as client:
        anonymous = await client.call_tool("fs_read", {"path": "README.md", "password": "letmein-now"})
    assert hidden.is_error and anonymous.is_error

    hidden_span, anonymous_span = spans.get_finished_spans()
    assert hidden_span.name == "tools/call"  # a name the role may not see is not used as a span name
    assert dict(hidden_span.attributes or {})["gen_ai.tool.name"] == "shell_run"
    assert dict(hidden_span.attributes or {})["error.type"] == "unknown_tool"
    assert dict(anonymous_span.attributes or {})["error.type"] == "unauthenticated"

    first, second = decisions(config)
    assert first["result"]["rules"] == ["gateway.unknown_tool"] and first["result"]["action"] == "deny"
    assert first["input"]["arguments"]["command"] == "export API_TOKEN=***; make"
    assert first["input"]["effects"] is None
    assert second["result"]["rules"] == ["gateway.unauthenticated"]
    assert second["input"]["principal"] is None
    assert second["input"]["arguments"]["password"] == "***"
    text = (config.state_dir / "decisions.jsonl").read_text()
    assert "s3cr3t-value" not in text and "letmein-now" not in text and planner not in text


async def test_otlp_is_off_by_default(gateway: Any, config: Any) -> None:
    telemetry = gateway.telemetry
    assert config.telemetry == TelemetryConfig()
    assert telemetry.endpoint is None and telemetry.exporters == [] and telemetry.provider is None
    assert not telemetry.enabled and telemetry.tracer is None
    async with inproc_client(gateway, token(config, "developer")) as client:
        assert not (await client.call_tool("fs_read", {"path": "README.md"})).is_error
    event = ledger_rows(gateway)[-1]
    assert len(event.span_id) == 16 and event.detail["decision_id"]  # the ledger and the decision log still join
    assert decisions(config)[0]["span_id"] == event.span_id


def test_otlp_endpoint_resolution() -> None:
    assert otlp_endpoint(TelemetryConfig(), {}) is None
    configured = TelemetryConfig(otlp_endpoint="http://collector:4318/")
    assert otlp_endpoint(configured, {}) == "http://collector:4318/v1/traces"
    full = TelemetryConfig(otlp_endpoint="https://otel.example/v1/traces")
    assert otlp_endpoint(full, {}) == "https://otel.example/v1/traces"
    assert otlp_endpoint(TelemetryConfig(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == "env"
    assert otlp_endpoint(configured, {"OTEL_SDK_DISABLED": "true"}) is None
    assert otlp_endpoint(configured, {"OTEL_TRACES_EXPORTER": "none"}) is None


class Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        Collector.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.received = []
    server = HTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_spans_are_exported_over_otlp_http_when_configured(
    config: Any, collector: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.runtime import Gateway

    monkeypatch.setenv("COLLECTOR_KEY", "k-123")
    config = reconfigure(
        config, telemetry={"otlp_endpoint": collector, "otlp_headers": {"x-api-key": "${COLLECTOR_KEY}"}}
    )
    gateway = Gateway(config)
    try:
        async with inproc_client(gateway, token(config, "developer")) as client:
            assert not (await client.call_tool("fs_read", {"path": "README.md"})).is_error
        # leaving running() flushed the batch
        (path, headers, body), *_ = Collector.received
        assert path == "/v1/traces"
        assert headers["content-type"] == "application/x-protobuf" and headers["x-api-key"] == "k-123"
        event = ledger_rows(gateway)[-1]
        assert b"tools/call fs_read" in body
        assert bytes.fromhex(event.trace_id) in body and bytes.fromhex(event.span_id) in body
    finally:
        gateway.telemetry.shutdown()


def test_session_id_is_never_the_credential() -> None:
    telemetry = Telemetry(TelemetryConfig(), decisions=None)  # type: ignore[arg-type]
    sessionless = Call(
        tool="fs_read",
        arguments={},
        origin=Origin(
            transport="http", protocol_version="2026-07-28", token="jwt.token.here", session_id="jwt.token.here"
        ),
    )
    assert "mcp.session.id" not in telemetry._start_attributes(sessionless)
    assert telemetry._start_attributes(sessionless)["network.transport"] == "tcp"
    session = Call(
        tool="fs_read",
        arguments={},
        origin=Origin(transport="http", protocol_version="2025-11-25", token="jwt.token.here", session_id="abc123"),
    )
    assert telemetry._start_attributes(session)["mcp.session.id"] == "abc123"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("AWS_SECRET_ACCESS_KEY=abc/def+ghi\nnext", "AWS_SECRET_ACCESS_KEY=***\nnext"),
        ("export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 && make", "export GITHUB_TOKEN=*** && make"),
        ('curl -H "Authorization: Bearer abc.def" https://api', 'curl -H "Authorization: Bearer ***" https://api'),
        ("git clone https://bob:hunter2@example.com/r.git", "git clone https://bob:***@example.com/r.git"),
        ('{"api_key": "xyz"}', '{"api_key": ***}'),
        ("key AKIAIOSFODNN7EXAMPLE", "key ***"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n", "***\n"),
        ("def token_count(text): return len(text)", "def token_count(text): return len(text)"),
        ("src/app.py", "src/app.py"),
        # a policy's reason lists paths after a plural kind word; a variable named like one is still a secret
        ("touches secrets or credentials: .env", "touches secrets or credentials: .env"),
        ("DB_TOKENS: hunter2", "DB_TOKENS: ***"),
        ("PASSWORDS: hunter2", "PASSWORDS: ***"),
        ("tokens: hunter2", "tokens: ***"),
    ],
)
def test_mask_text(text: str, masked: str) -> None:
    assert mask_text(text) == masked


def test_redact_reports_json_pointers() -> None:
    document = {"arguments": {"token": "t", "a/b": ["ok", "SECRET=x"]}, "n": 1}
    masked, pointers = redact(document)
    assert masked == {"arguments": {"token": "***", "a/b": ["ok", "SECRET=***"]}, "n": 1}
    assert pointers == ["/arguments/token", "/arguments/a~1b/1"]
    assert document["arguments"]["token"] == "t"  # the original is untouched


def test_decision_log_can_be_turned_off(config: Any) -> None:
    from gateway.runtime import Gateway

    config = reconfigure(config, telemetry={"decision_log": False})
    gateway = Gateway(config)
    assert gateway.telemetry.decisions.path is None
    assert json.loads(json.dumps(config.telemetry.model_dump()))["decision_log"] is False
    assert not Path(config.state_dir / "decisions.jsonl").exists()


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("export AWS_SECRET_ACCESS_KEY=abc123xyz && make", "abc123xyz"),
        ("curl -H 'X-Api-Key: k9k9k9k9' https://api.example.com", "k9k9k9k9"),
        ("DB_PASS=hunter2 ./run", "hunter2"),
        ("curl -u admin:Hunter2 https://x.example", "Hunter2"),
        ("npm publish --//registry.npmjs.org/:_authToken=npm_" + "a1" * 18, "a1a1a1a1"),
        ("git clone https://bob:s3cretpw@git.example.com/r.git", "s3cretpw"),
        ("Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        ("export STRIPE_KEY=whatever-it-holds", "whatever-it-holds"),
        ("SIGNING_KEY=abc123 MY_SALT=pepper9", "abc123"),
        ("stripe.api_key = 'sk_live_" + "4eC39HqLyjWDarjtT1zd" + "p7dc'", "4eC39HqLyjWDarjtT1zd"),
        ("key=AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"),
        ("SG." + "a" * 22 + "." + "b" * 43, "b" * 43),
        ("twilio SK" + "0123456789abcdef" * 2, "0123456789abcdef"),
        ("upload pypi-AgEIcHlwaS5vcmc" + "x" * 60, "x" * 60),
        ("vault hvs." + "CAESIJ" * 5, "CAESIJ" * 5),
        ("bot 123456789:" + "AAH" * 11 + "xy", "AAH" * 11),
        ("post https://hooks.slack.com/services/T000/B000/" + "X" * 24, "X" * 24),
        ("AccountName=x;AccountKey=" + "Q" * 88, "Q" * 88),
    ],
)
def test_mask_text_hides_common_secrets(text: str, secret: str) -> None:
    from gateway.decision_log import mask_text

    assert secret not in mask_text(text)


def test_mask_text_caps_what_it_logs() -> None:
    from gateway.decision_log import MAX_LOGGED_CHARS, mask_text

    masked = mask_text("token " + ".a" * 500_000)  # the shape that made an unbounded pattern quadratic
    assert len(masked) < MAX_LOGGED_CHARS + 100 and masked.endswith("characters not logged]")


def test_decision_results_are_masked_too(tmp_path: Path) -> None:
    from gateway.decision_log import DecisionLog

    log = DecisionLog(tmp_path / "d.jsonl", labels={})
    result = {"action": "ask", "tier": 3, "reasons": ["runs 'serve --password=hunter2zz'"], "rules": ["x"]}
    entry = log.record({"arguments": {}}, result, trace_id=None, span_id=None)
    log.flush()
    assert "hunter2zz" not in json.dumps(entry) and "hunter2zz" not in (tmp_path / "d.jsonl").read_text()


def test_secret_looking_keys_are_masked_whatever_they_hold() -> None:
    from gateway.decision_log import redact

    headers = {"X-Api-Key": "plain", "Cookie": "sid=1", "private_key": "k", "aws_access_key": "a", "note": "fine"}
    masked, pointers = redact({"headers": headers})
    assert masked["headers"] == {k: "***" if k != "note" else "fine" for k in headers}
    assert len(pointers) == 4


def test_http_client_libraries_do_not_log_each_request() -> None:
    """One INFO line per proxied call from httpx was a measurable part of a call's cost; debug still shows it."""
    probe = (
        "import logging, sys; from gateway.telemetry import configure_logging; configure_logging(sys.argv[1]); "
        "print(all(logging.getLogger(n).isEnabledFor(logging.INFO) for n in ('httpx2', 'httpcore2.connection')))"
    )
    for level, shown in (("info", "False"), ("debug", "True")):
        out = subprocess.run([sys.executable, "-c", probe, level], capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == shown, out.stderr
