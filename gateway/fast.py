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

    local = LocalGateway.find("gateway.yaml")           # None: no gateway serves this config here
    answered = local.ask("/local/check", {...}) if local else None   # (status, JSON) or None: decide yourself
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from gateway.locations import state_dir

__all__ = [
    "ANSWER_HEADER",
    "REQUEST_HEADER",
    "SECRET_NAME",
    "SERVING_FILE",
    "WINDOW_S",
    "LocalGateway",
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

        try:
            path = Path(config_path).resolve()
            raw = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
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
        import http.client
        from urllib.parse import urlsplit

        body = json.dumps(payload).encode()
        stamp, nonce = str(int(time.time())), os.urandom(16).hex()
        mac = request_mac(self.secret, path, stamp, nonce, body)
        where = urlsplit(self.url)
        connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=CONNECT_TIMEOUT_S)
        try:
            connection.connect()
            assert connection.sock is not None
            connection.sock.settimeout(ANSWER_TIMEOUT_S)
            headers = {"content-type": "application/json", REQUEST_HEADER: f"v1 {stamp} {nonce} {mac}"}
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read()
            proof = response.getheader(ANSWER_HEADER) or ""
        except (OSError, http.client.HTTPException):
            return None
        finally:
            connection.close()
        if not hmac.compare_digest(proof, answer_mac(self.secret, nonce, response.status, answer)):
            if response.status != 403:  # 403: the gateway refused the request's proof (a new secret, a clock)
                print(f"gateway: {self.url} answered without this gateway's proof; deciding here", file=sys.stderr)
            return None
        try:
            return response.status, json.loads(answer)
        except ValueError:
            return None
