"""A scripted model: a small Anthropic Messages API server that answers with a fixed sequence of turns.

Claude Code (or any Anthropic client) pointed at it with ANTHROPIC_BASE_URL runs the script's tool calls
for real; the server keeps every request, so a test can read what came back (the tool results).

    script = [[tool_use("Bash", {"command": "ls"})], [text("done")]]
    with ScriptedModel(script).serve() as model:          # http://127.0.0.1:PORT
        run claude -p ... with ANTHROPIC_BASE_URL=model.url
    model.tool_results["toolu_script_0_0"]                # what Claude Code sent back for that call
    ScriptedModel(script, before_turn={1: approve})       # approve() runs once, before turn 1 is answered

The agent loop's requests (the ones that offer tools) get the next turn of the script: the turn is the
number of scripted assistant turns already in the conversation, so a retried request gets the same turn.
Everything else Claude Code asks a model for (a session title, a quota check, token counting) gets a
generic answer. POST /v1/messages streams (SSE) when the request says "stream": true.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]
SCRIPTED = "toolu_script_"


def tool_use(name: str, tool_input: dict[str, Any]) -> Block:
    return {"type": "tool_use", "name": name, "input": tool_input}


def text(words: str) -> Block:
    return {"type": "text", "text": words}


class ScriptedModel:
    def __init__(
        self,
        script: list[list[Block]],
        model: str = "claude-scripted-1",
        before_turn: dict[int, Callable[[], None]] | None = None,
    ) -> None:
        self.script = script
        self.model = model
        self.before_turn = dict(before_turn or {})  # what the test does between two turns (a person approving)
        self.requests: list[dict[str, Any]] = []  # every request: path and JSON body
        self.tool_results: dict[str, Any] = {}  # tool_use id -> the tool_result block Claude Code sent
        self.url = ""
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def turn(self, body: dict[str, Any]) -> list[Block]:
        """The blocks to answer a request with: the script's next turn, or a generic one."""
        messages = body.get("messages") or []
        for message in messages:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    with self._lock:
                        self.tool_results[block.get("tool_use_id")] = block
        if not body.get("tools"):
            return [text("ok")]  # a side request: a title, a summary, a quota check
        done = sum(1 for m in messages if m.get("role") == "assistant" and _scripted(m))
        if done >= len(self.script):
            return [text("The script is finished.")]
        with self._lock:
            between = self.before_turn.pop(done, None)
        if between is not None:
            between()
        return [
            {**block, "id": f"{SCRIPTED}{done}_{i}"} if block["type"] == "tool_use" else block
            for i, block in enumerate(self.script[done])
        ]

    def message(self, blocks: list[Block]) -> dict[str, Any]:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return {
            "id": f"msg_scripted_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }

    def events(self, message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """The message as the Messages API streams it."""
        start = {**message, "content": [], "stop_reason": None}
        yield "message_start", {"type": "message_start", "message": start}
        for index, block in enumerate(message["content"]):
            if block["type"] == "tool_use":
                opened = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                opened = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        stopped = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        yield "message_delta", {"type": "message_delta", "delta": stopped, "usage": {"output_tokens": 10}}
        yield "message_stop", {"type": "message_stop"}

    @contextmanager
    def serve(self) -> Iterator[ScriptedModel]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                with model._lock:
                    model.requests.append({"path": path, "body": body})
                if path.endswith("/count_tokens"):
                    self.reply({"input_tokens": 10})
                elif path.endswith("/v1/messages"):
                    message = model.message(model.turn(body))
                    self.stream(message) if body.get("stream") else self.reply(message)
                else:
                    self.reply({"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)

            def do_GET(self) -> None:
                self.reply({"data": [], "has_more": False})

            def reply(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream(self, message: dict[str, Any]) -> None:
                data = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in model.events(message)).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)


def _scripted(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        b.get("type") == "tool_use" and str(b.get("id", "")).startswith(SCRIPTED) for b in content
    )
