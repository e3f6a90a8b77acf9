"""Ask the running gateway: ``gateway check`` and ``gateway hook claude-code`` in a few tens of milliseconds.

A command that decides in its own process loads the whole gateway (pydantic, the policy engine, the shell
parser: about 0.4 s). When a gateway serves the same gateway.yaml on this machine, this client (standard
library and PyYAML only) asks it instead, over HTTP on loopback, and the command prints the answer exactly
as it would have printed its own. When none answers, the command decides in-process as before.

Who may ask: whoever can read the state dir, which is who could decide in-process anyway (the signing key
and the store live there, owner-only). The state dir holds ``serving.json`` (where the gateway listens,
written by ``gateway serve --http``) and the local secret ``keys/local.secret``. Every request carries a MAC
with that secret over its path, time, nonce and body, and every answer a MAC over the nonce, status and
body: a process that took the port over after the gateway stopped (an agent's own server, say) can neither
ask nor answer, and the command decides in-process. A request is good for ``WINDOW_S`` seconds.

    answer(["check", "--role", "worker", "--tool", "fs_read"])   # the exit code, or None: decide yourself
    local = LocalGateway.find("gateway.yaml")           # None: no gateway serves this config here
    answered = local.ask("/local/check", {...}) if local else None   # (status, JSON) or None: decide yourself

``answer`` runs before the rest of the command line is loaded (gateway.cli.main): a small parser with the
options of ``check`` and ``hook`` (gateway/cli/options.py), and a plain socket for HTTP (http.client would
load ssl and email). Anything it does not answer (another command, bad usage, no gateway) is the full
command line's, which decides in-process.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import io
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from gateway.cli.options import CONFIG_FILE, check_options, hook_options
from gateway.locations import state_dir

__all__ = [
    "ANSWER_HEADER",
    "REQUEST_HEADER",
    "SECRET_NAME",
    "SERVING_FILE",
    "WINDOW_S",
    "LocalGateway",
    "answer",
    "answer_mac",
    "request_mac",
    "serving_record",
]

SERVING_FILE = "serving.json"  # in the state dir: {"url", "config", "pid"}
SECRET_NAME = "local"  # keys/local.secret (KeyRing.secret)
REQUEST_HEADER = "x-gateway-local"  # "v1 STAMP NONCE MAC"
ANSWER_HEADER = "x-gateway-local-answer"  # MAC of the answer
WINDOW_S = 60  # how old (or how far ahead) a request's time may be
CONNECT_TIMEOUT_S = 1.0
ANSWER_TIMEOUT_S = 30.0  # a decision within the policy deadline, plus the store; past this, decide in-process


def request_mac(secret: bytes, path: str, stamp: str, nonce: str, body: bytes) -> str:
    message = f"request\n{path}\n{stamp}\n{nonce}\n{hashlib.sha256(body).hexdigest()}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def answer_mac(secret: bytes, nonce: str, status: int, body: bytes) -> str:
    message = f"answer\n{nonce}\n{status}\n{hashlib.sha256(body).hexdigest()}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def serving_record(host: str, port: int, config: Path) -> dict[str, Any]:
    """What ``gateway serve --http`` writes to ``serving.json``: the loopback URL for an address bound to
    every interface, and the config it serves (a command with another config decides for itself)."""
    connect = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    shown = f"[{connect}]" if ":" in connect else connect
    return {"url": f"http://{shown}:{port}", "config": str(config), "pid": os.getpid()}


class LocalGateway:
    """A running gateway serving ``config`` on this machine, and the secret to ask it with."""

    def __init__(self, url: str, secret: bytes) -> None:
        self.url = url
        self.secret = secret

    @classmethod
    def find(cls, config_path: str | Path) -> LocalGateway | None:
        """The gateway serving this gateway.yaml, if its state dir says one does and this process can read
        the secret; None otherwise (anything unreadable or odd: the command decides in-process)."""
        import yaml

        from gateway.yaml_text import safe_load

        try:
            path = Path(config_path).resolve()
            raw = safe_load(path.read_text(encoding="utf-8"))
            if not isinstance(raw, dict):
                return None
            state = state_dir(raw.get("workspace") or ".", raw.get("state_dir"), path.parent)
            serving = json.loads((state / SERVING_FILE).read_text())
            if serving.get("config") != str(path) or not str(serving.get("url", "")).startswith("http://"):
                return None
            return cls(serving["url"], (state / "keys" / f"{SECRET_NAME}.secret").read_bytes())
        except (OSError, ValueError, TypeError, AttributeError, yaml.YAMLError):
            return None

    def ask(self, path: str, payload: dict[str, Any]) -> tuple[int, Any] | None:
        """POST ``payload`` to ``path``: the status and JSON of an answer this gateway proved it wrote, or
        None (nothing listens, it timed out, or the answer is not the gateway's)."""
        body = json.dumps(payload).encode()
        stamp, nonce = str(int(time.time())), os.urandom(16).hex()
        mac = request_mac(self.secret, path, stamp, nonce, body)
        try:
            status, headers, answer = post(self.url, path, body, {REQUEST_HEADER: f"v1 {stamp} {nonce} {mac}"})
        except (OSError, ValueError):
            return None
        if not hmac.compare_digest(headers.get(ANSWER_HEADER, ""), answer_mac(self.secret, nonce, status, answer)):
            if 200 <= status < 300:  # an answer, but not this gateway's (403, 404: a refusal, an older gateway)
                print(f"gateway: {self.url} answered without this gateway's proof; deciding here", file=sys.stderr)
            return None
        try:
            return status, json.loads(answer)
        except ValueError:
            return None


def post(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 POST on a new connection, read to its end: the status, headers (lower-case names) and
    body. ValueError when the answer is not HTTP this reads (chunked, or no status line)."""
    where = urlsplit(url)
    host, port = where.hostname or "", where.port or 80
    lines = [f"POST {path} HTTP/1.1", f"Host: {where.netloc}", "Content-Type: application/json"]
    lines += [f"Content-Length: {len(body)}", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as sock:
        sock.settimeout(ANSWER_TIMEOUT_S)
        sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
    answer_headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    if answer_headers.get("transfer-encoding", "identity") != "identity":
        raise ValueError("a chunked answer")
    length = answer_headers.get("content-length")
    return int(parts[1]), answer_headers, rest[: int(length)] if length and length.isdigit() else rest


# --- the command line's fast path ----------------------------------------------------------------------


class Unparsed(Exception):
    """Not a command this parser reads: the full command line's (it also says what is wrong)."""


class QuietParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise Unparsed(message)


def parse(argv: list[str]) -> argparse.Namespace | None:
    parser = QuietParser(prog="gateway", add_help=False)
    parser.add_argument("--config", default=CONFIG_FILE)
    commands = parser.add_subparsers(dest="command", parser_class=QuietParser)
    check_options(commands.add_parser("check", add_help=False))
    hook_options(commands.add_parser("hook", add_help=False))
    try:
        return parser.parse_args(argv)
    except Unparsed:
        return None


def answer(argv: list[str]) -> int | None:
    """``gateway check`` or ``gateway hook claude-code`` answered by the gateway serving their config on this
    machine: the exit code; None when this is another command, or no gateway answered (a hook's input, read
    from stdin, is put back for the command to decide itself)."""
    args = parse(argv) if argv[:1] != ["--help"] and argv else None
    if args is None or args.command is None:
        return None
    local = LocalGateway.find(args.config)
    if local is None:
        return None
    return answer_check(local, args) if args.command == "check" else answer_hook(local, args)


def asked(local: LocalGateway, path: str, payload: dict[str, Any]) -> tuple[int, Any] | None:
    """``local.ask``, and None on any fault of this client's: the command then decides itself (a hook that
    crashed would let Claude Code run the call)."""
    try:
        return local.ask(path, payload)
    except Exception as exc:
        print(f"gateway: asking the running gateway failed ({type(exc).__name__}); deciding here", file=sys.stderr)
        return None


def answer_check(local: LocalGateway, args: argparse.Namespace) -> int | None:
    try:
        arguments = json.loads(args.args)
    except ValueError:
        return None  # the command says what is wrong, in its words
    if not isinstance(arguments, dict):
        return None
    fields = {"role": args.role, "agent": args.agent, "task": args.task, "tool": args.tool, "explain": args.explain}
    answered = asked(local, "/local/check", {**fields, "arguments": arguments})
    if answered is None:
        return None
    status, body = answered
    if status != 200:
        from gateway.cli import EXIT_ERROR

        print(f"gateway: {body.get('error') if isinstance(body, dict) else body}", file=sys.stderr)
        return EXIT_ERROR
    from gateway.cli.output import show_check

    return show_check(args, body)


def answer_hook(local: LocalGateway, args: argparse.Namespace) -> int | None:
    raw = sys.stdin.read()
    event = {"event": raw, "token": os.environ.get("GATEWAY_TOKEN"), "role": args.role, "agent": args.agent}
    answered = asked(local, "/local/hooks/claude-code", event)
    if answered is None or answered[0] != 200:
        sys.stdin = io.StringIO(raw)  # the command decides itself, on the same input
        return None
    print(json.dumps(answered[1], indent=2))
    return 0
