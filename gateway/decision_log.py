"""The decision log: one JSON line per policy decision, shaped like OPA's decision logs.

Every call the policy decided on gets an entry, allowed, asked or denied, in ``<state_dir>/decisions.jsonl``
(append-only, one line each) and at debug level in the structlog stream. The entry carries the policy input
with secrets masked, never the caller's token: keys that look secret (``secret_key``) and values that look
like credentials (``KEY=value`` assignments to secret-looking names, bearer tokens, JWTs, cloud and forge keys,
private key blocks) become ``"***"``, and ``masked`` lists where (JSON pointers, as OPA does).

    log = DecisionLog(state_dir / "decisions.jsonl", labels={"app": "mcp-gateway", "version": "0.1.0"})
    entry = log.record(input_doc, decision.model_dump(), trace_id=..., span_id=..., call_id=...)
    entry["decision_id"]   # also in the call's ledger event, detail.decision_id

    {"decision_id": "5f0c...", "timestamp": "2026-...Z", "path": "gateway/decision", "input": {...},
     "result": {"action": "deny", "tier": 3, "reasons": [...], "rules": [...], "revision": "sha256:..."},
     "bundles": {"gateway": {"revision": "sha256:..."}}, "masked": ["/input/arguments/token"],
     "labels": {"app": "mcp-gateway", "version": "0.1.0", ...}, "trace_id": "...", "span_id": "...", "call_id": "..."}
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import re
import threading
import time
import uuid
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from gateway.policy.input import secret_key
from gateway.types import JSONObject

DECISION_PATH = "gateway/decision"
MASK = "***"

log = structlog.get_logger("gateway.decisions")

# Every repetition is bounded or possessive: these run on agent-supplied text of up to a megabyte, and an
# unbounded prefix before the keyword made masking quadratic (a 16 KB argument took seconds).
# The text before the keyword (AWS_ in AWS_SECRET_ACCESS_KEY) need not be matched: it is kept as it is.
# Names of secret values, after detect-secrets' keyword list (too slow for every decision: ~0.5 ms a line,
# so its token shapes are followed below instead), plus any NAME_KEY, NAME_SALT or NAME_AUTH variable.
_SECRET_NAME = (
    r"(?:SECRET|TOKEN|PASSWORD|PASSWD|PASS|PWD|CREDENTIAL"
    r"|(?:API|ACCESS|PRIVATE|PRIV|AUTH|SERVICE|ACCOUNT|CLIENT|DB|DATABASE|SIGNING|ENCRYPTION|MASTER)[_-]?KEY"
    r"|[A-Z0-9]_(?:KEY|KEYS|SALT|AUTH)\b)[\w-]{0,64}+"
)
# Prose that lists what kinds of thing it names ("touches secrets or credentials: .env", a policy's reason) is
# not a NAME: value pair: a lowercase plural kind word of its own, then ": " and a path, introduces a list of
# paths. Only exactly that: DB_TOKENS: x, PASSWORDS: x or tokens: x are still masked.
_PROSE_LIST = r"(?!(?<![\w-])(?-i:secrets|credentials|tokens|passwords|keys)\s{0,8}:\s(?=[./~]))"
# each pattern: the whole match is replaced by <keep>***<tail>
_SECRET_VALUES = [
    # NAME=value, NAME: value, "name": "value", --password=value, X-Api-Key: value, export AWS_SECRET_KEY=...
    re.compile(
        rf"""(?i){_PROSE_LIST}(?P<keep>{_SECRET_NAME}["']?\s{{0,8}}[=:]\s{{0,8}})(?:"[^"]*+"|'[^']*+'|[^\s"',;&|)]++)"""
    ),
    re.compile(
        r"""(?i)(?P<keep>\bauthorization["']?\s{0,8}[=:]\s{0,8}["']?(?:(?:bearer|basic|token)\s{1,8})?)[^\s"',;]++"""
    ),
    re.compile(r"(?i)(?P<keep>\b(?:bearer|basic)\s{1,8})[A-Za-z0-9._~+/=-]{8,}+"),
    re.compile(r"(?P<keep>(?:^|\s)(?:-u|--user)\s{1,8}[^\s:]{1,128}:)[^\s\"']++"),  # curl -u user:password
    re.compile(r"\beyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+"),  # a JWT
    re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}+"),  # Stripe
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),  # Google API key
    re.compile(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),  # SendGrid
    re.compile(r"\b(?:AC|SK)[0-9a-f]{32}\b"),  # Twilio
    re.compile(r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),  # Mailchimp
    re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}+"),  # PyPI upload token
    re.compile(r"\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,}+"),  # Square
    re.compile(r"\bhv[sb]\.[A-Za-z0-9_-]{20,}+"),  # HashiCorp Vault
    re.compile(r"\bdo[por]_v1_[a-f0-9]{64}\b"),  # DigitalOcean
    re.compile(r"\b[0-9]{8,10}:[A-Za-z0-9_-]{35}\b"),  # Telegram bot
    re.compile(r"\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}\b"),  # Discord bot
    re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}+"),  # Slack webhook
    re.compile(r"(?P<keep>AccountKey=)[A-Za-z0-9+/=]{40,}+"),  # Azure storage
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+|glpat-[A-Za-z0-9_-]{20,}+)"),
    re.compile(r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}+|xox[abposr]-[A-Za-z0-9-]{10,}+|npm_[A-Za-z0-9]{36})"),
    re.compile(r"-----BEGIN [A-Z ]{0,32}PRIVATE KEY-----.*?(?:-----END [A-Z ]{0,32}PRIVATE KEY-----|$)", re.DOTALL),
    re.compile(r"(?i)(?P<keep>\b[a-z][a-z0-9+.-]{0,31}://[^:/@\s]{1,256}:)[^@/\s]{1,256}(?P<tail>@)"),  # user:pw@
]
# What a log keeps of one string: enough to review, and a bound on the time masking takes.
MAX_LOGGED_CHARS = 16_384


# a cheap first look: a string none of the patterns could match is left alone without running them all
_MAYBE_SECRET = re.compile(
    r"(?i)secret|token|pass|pwd|[_-]key|key\s*[=:]|apikey|[_-]salt|_auth|private|credential|authoriz|bearer|basic"
    r"|eyJ|A3T|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|glpat-|sk-|sk_|rk_|xox|npm_|-u\s|--user|://|AIza|SG\."
    r"|AC[0-9a-f]|SK[0-9a-f]|-us[0-9]|pypi-|sq0|hv[sb]\.|_v1_|[0-9]{8}:|\.[A-Za-z0-9_-]{6}\."
)


# Strings already found to hold nothing to mask (a review page, an export masks the same reasons, rules, names
# thousands of times): only clean ones are kept, so no secret stays in memory for this; bounded, then emptied.
_CLEAN_TEXTS: dict[str, None] = {}
CLEAN_TEXTS_KEPT = 65_536
CLEAN_TEXT_CHARS = 512  # longer strings are masked each time (rarely repeated, and costly to keep)


def mask_text(text: str) -> str:
    """The text with every credential-looking value replaced by ``***`` (and cut to MAX_LOGGED_CHARS)."""
    if text in _CLEAN_TEXTS:
        return text
    if len(text) > MAX_LOGGED_CHARS:
        text = f"{text[:MAX_LOGGED_CHARS]}...[{len(text) - MAX_LOGGED_CHARS} more characters not logged]"
    if not _MAYBE_SECRET.search(text):
        _remember_clean(text)
        return text
    masked = text
    for pattern in _SECRET_VALUES:
        masked = pattern.sub(_replace, masked)
    if masked == text:
        _remember_clean(text)
    return masked


def _remember_clean(text: str) -> None:
    if len(text) <= CLEAN_TEXT_CHARS:
        if len(_CLEAN_TEXTS) >= CLEAN_TEXTS_KEPT:
            _CLEAN_TEXTS.clear()
        _CLEAN_TEXTS[text] = None


def _replace(match: re.Match[str]) -> str:
    groups = match.groupdict()
    return f"{groups.get('keep') or ''}{MASK}{groups.get('tail') or ''}"


@functools.lru_cache(maxsize=4096)
def secret_field(key: str) -> bool:
    """Whether a key's value is masked whatever it holds: a secret-looking key (``secret_key``), or a name whose
    ``NAME=value`` ``mask_text`` would mask (``DB_PASS`` in an ``env`` map is masked as ``DB_PASS=...`` is in a
    command line): one rule for a secret's name, in text and in documents."""
    return secret_key(key) or _SECRET_VALUES[0].search(f"{key}=value") is not None


def redact(document: Any) -> tuple[Any, list[str]]:
    """A masked copy of a document (``secret_field`` for keys, ``mask_text`` for values) and the JSON pointers
    of what was masked."""
    masked: list[str] = []
    return _mask(document, (), masked), masked


def redact_input(input_document: JSONObject) -> tuple[JSONObject, list[str]]:
    """``redact`` of a policy input, its session's flow labels (``input.flow``) masked once per version of them:
    they repeat on every call of a session, and masking their sources was as dear as charging a budget."""
    flow = input_document.get("flow")
    if not isinstance(flow, dict):
        return redact(input_document)
    rest, masked = redact({k: v for k, v in input_document.items() if k != "flow"})
    masked_flow, flow_masked = _redacted_flow(json.dumps(flow, default=str))
    # the masked flow is shared between entries: they are written out, never changed
    return {k: masked_flow if k == "flow" else rest[k] for k in input_document}, [*masked, *flow_masked]


@functools.lru_cache(maxsize=1024)
def _redacted_flow(flow_json: str) -> tuple[Any, tuple[str, ...]]:
    masked: list[str] = []
    return _mask(json.loads(flow_json), ("flow",), masked), tuple(masked)


def _mask(value: Any, path: tuple[Any, ...], masked: list[str]) -> Any:
    # One walk, on every decision: a secret-looking key's value becomes MASK (and is listed unless it already
    # was MASK); strings anywhere else are masked by their content. A value's pointer is spelled only when it
    # is listed (most walks list nothing, and an export walks thousands of entries).
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and secret_field(k):
                if v != MASK:
                    masked.append(_pointer((*path, k)))
                out[k] = MASK
            else:
                out[k] = _mask(v, (*path, k), masked) if isinstance(v, str | dict | list) else v
        return out
    if isinstance(value, list):
        return [_mask(v, (*path, i), masked) if isinstance(v, str | dict | list) else v for i, v in enumerate(value)]
    if isinstance(value, str):
        cleaned = mask_text(value)
        if cleaned != value:
            masked.append(_pointer(path))
        return cleaned
    return value


def _pointer(path: tuple[Any, ...]) -> str:
    return "".join(f"/{_escape(part)}" for part in path)


def _escape(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


# Batches: a writer thread flushes FLUSH_S after the first entry waiting, a batch of FLUSH_BYTES at once.
FLUSH_S = 0.1
FLUSH_BYTES = 64 * 1024
IDLE_ROUNDS = 10  # the writer thread ends after this many intervals with nothing to write (no thread per call)
# A file that cannot be written keeps its entries for the next try up to this much, then drops the oldest.
MAX_PENDING_BYTES = 16 * FLUSH_BYTES
# every buffer of this process: flushed at exit, and before this process reads the file (read_entries)
_BUFFERS: weakref.WeakSet[AppendBuffer] = weakref.WeakSet()


class AppendBuffer:
    """Lines appended to a file in batches, in the order given: one ``write()`` on an O_APPEND descriptor per
    batch, so lines from concurrent gateway processes never interleave, and no open/write/close per line.

        buffer = AppendBuffer(state_dir / "decisions.jsonl")
        buffer.append(decision_id, line)   # returns at once; written within flush_s
        buffer.flush()                     # everything appended so far is in the file

    A batch is written by a writer thread ``flush_s`` after its first line, at once (by the appending thread)
    when ``flush_bytes`` are waiting, on ``flush()``, and at interpreter exit, so a clean stop loses nothing.
    What a crash can lose: a SIGKILL, a power loss or ``os._exit`` loses the lines not yet written, at most
    ``flush_s`` worth or ``flush_bytes``. That is acceptable because the decision log is not the record of
    truth: every call's ledger row is committed before its answer and names its ``decision_id``; an entry
    missing from this file means only that ``gateway trace show`` cannot show that call's masked arguments.
    A failed write (disk full, the file unwritable) is logged and its lines kept for the next try, up to
    MAX_PENDING_BYTES; a line dropped beyond that, or left when the writer thread dies, is named in a log line.
    """

    def __init__(self, path: Path, *, flush_s: float = FLUSH_S, flush_bytes: int = FLUSH_BYTES) -> None:
        self.path = path
        self.flush_s = flush_s
        self.flush_bytes = flush_bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        self._reset()
        _BUFFERS.add(self)

    def _reset(self) -> None:
        self._pending: list[tuple[str, bytes]] = []  # (decision id, line), oldest first
        self._size = 0
        self._lock = threading.Lock()  # guards _pending, _size and _writer
        self._write_lock = threading.Lock()  # one batch at a time: batches reach the file in order
        self._writer: threading.Thread | None = None
        self._failing = False  # the last write failed (logged once per streak)

    def append(self, key: str, line: bytes) -> None:
        with self._lock:
            self._pending.append((key, line))
            self._size += len(line)
            full = self._size >= self.flush_bytes
            if self._writer is None:  # also when full: a failed inline flush leaves the lines for it
                self._writer = threading.Thread(target=self._run, name="decision-log-writer", daemon=True)
                self._writer.start()
        if full:
            self.flush()

    def flush(self) -> int:
        """Write every line appended so far; how many were written."""
        with self._write_lock:
            with self._lock:
                batch, self._pending, self._size = self._pending, [], 0
            if not batch:
                return 0
            try:
                self._write(batch)
            except Exception as exc:
                self._keep(batch, exc)
                return 0
            except BaseException:
                self._keep(batch, None)
                raise
        if self._failing:
            self._failing = False
            _report("the decision log is written again", path=str(self.path), level="warning")
        return len(batch)

    def _run(self) -> None:
        try:
            idle = 0
            while True:
                time.sleep(self.flush_s)
                written = self.flush()
                with self._lock:
                    idle = 0 if written or self._pending else idle + 1
                    if idle >= IDLE_ROUNDS:  # no entry for a while: the next append starts a writer again
                        self._writer = None
                        return
        except Exception:
            with self._lock:
                self._writer = None
                waiting = [key for key, _ in self._pending]
            # the lines stay pending (the next append, flush or exit writes them); say so
            _report("the decision log writer stopped", path=str(self.path), pending=waiting, exc_info=True)

    def _write(self, batch: list[tuple[str, bytes]]) -> None:
        data = memoryview(b"".join(line for _, line in batch))
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            while data:
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)

    def _keep(self, batch: list[tuple[str, bytes]], exc: BaseException | None) -> None:
        """A batch that could not be written goes back in front of the newer lines, within MAX_PENDING_BYTES."""
        if exc is not None and not self._failing:
            self._failing = True
            entries = [key for key, _ in batch]
            _report(
                "could not write the decision log; kept for the next try",
                path=str(self.path),
                error=str(exc),
                entries=entries,
            )
        with self._lock:
            pending = batch + self._pending
            size = sum(len(line) for _, line in pending)
            dropped: list[str] = []
            while pending and size > MAX_PENDING_BYTES:
                key, line = pending.pop(0)
                dropped.append(key)
                size -= len(line)
            self._pending, self._size = pending, size
        if dropped:
            _report("decision log entries dropped: the file cannot be written", path=str(self.path), lost=dropped)


def _report(event: str, *, level: str = "error", exc_info: bool = False, **fields: Any) -> None:
    # structlog only once configured: unconfigured, it prints to stdout, which the stdio transport owns
    if structlog.is_configured():
        getattr(log, level)(event, exc_info=exc_info, **fields)
    else:
        logging.getLogger("gateway.decisions").log(logging.getLevelName(level.upper()), "%s %s", event, fields)


def flush_pending(path: Path) -> None:
    """Write what this process has buffered for ``path``: a reader here sees every entry recorded before."""
    for buffer in list(_BUFFERS):
        if buffer.path == path:
            buffer.flush()


@atexit.register
def _flush_at_exit() -> None:
    for buffer in list(_BUFFERS):
        buffer.flush()


def _forget_in_child() -> None:
    # a forked child must not write its parent's lines again, nor wait on locks another thread held at the fork
    for buffer in list(_BUFFERS):
        buffer._reset()


os.register_at_fork(after_in_child=_forget_in_child)


class DecisionLog:
    """Masks decision entries and appends them, one JSON line each, to a file (``path`` None: structlog only).

    The lines are written in batches by an ``AppendBuffer`` (see there for when, and what a crash can lose)."""

    def __init__(
        self, path: Path | None, labels: JSONObject, *, flush_s: float = FLUSH_S, flush_bytes: int = FLUSH_BYTES
    ) -> None:
        self.path = path
        self.labels = labels
        self.buffer = AppendBuffer(path, flush_s=flush_s, flush_bytes=flush_bytes) if path is not None else None

    def record(
        self,
        input_document: JSONObject,
        result: JSONObject,
        *,
        trace_id: str | None,
        span_id: str | None,
        call_id: str | None = None,
        decision_id: str | None = None,
    ) -> JSONObject:
        masked_input, masked = redact_input(input_document)
        result, _ = redact(result)  # reasons quote argv and paths: the same secrets the input had
        entry: JSONObject = {
            "decision_id": decision_id or str(uuid.uuid4()),
            "timestamp": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "path": DECISION_PATH,
            "input": masked_input,
            "result": result,
            "labels": self.labels,
            "trace_id": trace_id,
            "span_id": span_id,
            "call_id": call_id,
        }
        if masked:
            entry["masked"] = [f"/input{pointer}" for pointer in masked]
        if result.get("revision"):  # as OPA names the bundle revision that decided
            entry["bundles"] = {"gateway": {"revision": result["revision"]}}
        self.write(entry)
        if structlog.is_configured():  # unconfigured structlog prints everything to stdout, which stdio owns
            log.debug("decision", decision=entry)
        return entry

    def write(self, entry: JSONObject) -> None:
        if self.buffer is None:
            return
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        # a lone surrogate a request carried (gateway/unicode.py) is written as its JSON escape, not refused
        line = text.encode("utf-8", "backslashreplace")
        self.buffer.append(str(entry["decision_id"]), line)

    def flush(self) -> None:
        """Write every entry recorded so far (Telemetry.flush calls this when a gateway stops)."""
        if self.buffer is not None:
            self.buffer.flush()


def read_entries(path: Path) -> list[JSONObject]:
    """Every entry of a decision log file, oldest first (this process's buffered ones written first)."""
    flush_pending(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class DecisionLogIndex:
    """Where each entry of a decision log file starts, read once per process: each ``find`` parses only the
    lines appended since the last one, then reads back just the entries asked for (the review pages show a
    page of calls; the file holds every decision ever made). A file that got shorter (replaced) is indexed
    again from the start; a last line still being written waits for the next ``find``.

        index = DecisionLogIndex(state_dir / "decisions.jsonl")
        entries = index.find({"5f0c..."}, {"9a1b..."})   # {decision id or call id: entry}
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._offset = 0
        self._by_decision: dict[str, int] = {}
        self._by_call: dict[str, int] = {}  # the first entry naming each call

    def find(self, decision_ids: set[str], call_ids: set[str]) -> dict[str, JSONObject]:
        """The entries with these decision ids (keyed by decision id), and for calls none of whose entries was
        asked for by decision id, the first entry naming the call (keyed by call id)."""
        flush_pending(self.path)  # the UI runs in the gateway: its own newest entries may be buffered
        with self._lock:
            if not self._catch_up():
                return {}
            wanted = {i: self._by_decision[i] for i in decision_ids if i in self._by_decision}
            for call_id in call_ids:
                if call_id in self._by_call:
                    wanted.setdefault(call_id, self._by_call[call_id])
            found: dict[str, JSONObject] = {}
            with self.path.open("rb") as file:
                for key, offset in wanted.items():
                    file.seek(offset)
                    found[key] = json.loads(file.readline())
            return found

    def _catch_up(self) -> bool:
        """Index the lines appended since the last call; False when there is no file."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return False
        if size < self._offset:
            self._offset, self._by_decision, self._by_call = 0, {}, {}
        if size == self._offset:
            return True
        with self.path.open("rb") as file:
            file.seek(self._offset)
            offset = self._offset
            for line in file:
                if not line.endswith(b"\n"):
                    break  # being written: read it next time
                self._note(line, offset)
                offset += len(line)
            self._offset = offset
        return True

    def _note(self, line: bytes, offset: int) -> None:
        try:
            entry = json.loads(line)
        except ValueError:
            return
        if not isinstance(entry, dict) or not isinstance(entry.get("input"), dict):
            return
        if isinstance(entry.get("decision_id"), str):
            self._by_decision[entry["decision_id"]] = offset
        if isinstance(entry.get("call_id"), str):
            self._by_call.setdefault(entry["call_id"], offset)
