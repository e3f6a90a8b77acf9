"""OPA's REST API in front of the real OPA evaluator (tests/real_opa.py): what the OPA engine's tests talk to.

No OPA binary can be installed on this machine, but OPA's Go engine can (tests/real_opa.py), so this small
server puts the parts of OPA's documented REST API (https://www.openpolicyagent.org/docs/rest-api) that
``gateway.policy.opa.OpaEngine`` and opa-python-client use in front of it, with OPA's status codes and
response shapes. The decisions are OPA's own (v1.20.2); the HTTP layer is this file's:

    GET    /health                       200 {}
    GET    /v1/policies                  200 {"result": [{"id", "raw"}]}
    GET    /v1/policies/{id}             200 {"result": {"id", "raw"}} | 404
    PUT    /v1/policies/{id}             200 {} | 400 {"code", "message", "errors": [{"code", "message", "location"}]}
    DELETE /v1/policies/{id}             200 {} | 404 | 400 (the rest would no longer compile)
    GET    /v1/data/{path}               200 {"result": value} | 200 {} when undefined
    POST   /v1/data/{path}  {"input"}    200 {"result": value} | 200 {} when undefined | 500 on an evaluation error
    PUT    /v1/data/{path}               204
    PATCH  /v1/data/{path}               204 (JSON Patch add/replace/remove)
    DELETE /v1/data/{path}               204 | 404
    POST   /v1/query {"query", "input"}  200 {"result": [bindings]}
    GET    /v1/config                    200 {"result": {...}}

As in OPA, a policy is compiled together with every other module when it is PUT, and a module that does
not compile (a syntax error, a call to a function no module defines, a recursive rule) is refused with 400
while the previous modules stay in force.

Builtin errors: OPA's server evaluates a request leniently unless it asks for ``strict-builtin-errors`` (a
failing builtin makes its expression undefined). The bridge decides that per process, not per request, so
this server runs in one mode (``--builtin-errors lenient``, the default, as ``opa run --server`` answers a
client that does not ask; or ``strict``) whatever a request asks. It counts the requests that asked for
strict errors (``GET /v1/config``, ``stand_in``), so a test can see that the gateway asks. With ``--token``
every /v1 request needs ``Authorization: Bearer TOKEN`` (OPA's ``--authentication=token`` with an
authorization policy that checks it); /health stays open.

    python tests/opa_rest_server.py --port 8181 [--host 127.0.0.1] [--token SECRET] [--builtin-errors strict]
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from typing import Any

import uvicorn
from real_opa import MODES, OPA_VERSION, load  # beside this script: its directory is first on sys.path
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

# "gateway/tiers.rego:12: rego_parse_error: unexpected eof token" in the bridge's error messages
ERROR = re.compile(r"(?P<file>[^\s:]+\.rego):(?P<row>\d+): (?P<code>rego_[a-z_]+): (?P<message>[^\n]*)")


class CompileError(Exception):
    """Modules OPA refuses, with OPA's own errors (code, message, file and row)."""

    def __init__(self, text: str, fallback_file: str) -> None:
        self.errors = [
            {
                "code": found["code"],
                "message": found["message"].strip(),
                "location": {"file": found["file"], "row": int(found["row"]), "col": 0},
            }
            for found in ERROR.finditer(text)
        ] or [{"code": "rego_compile_error", "message": text, "location": {"file": fallback_file, "row": 0, "col": 0}}]
        super().__init__(text)

    def body(self) -> dict[str, Any]:
        message = "error(s) occurred while compiling module(s)"
        return {"code": "invalid_parameter", "message": message, "errors": self.errors}


class Store:
    """Policies and data, and the OPA engine compiled from them."""

    def __init__(self, mode: str) -> None:
        self.bindings = load(mode)
        self.mode = mode
        self.policies: dict[str, str] = {}
        self.data: dict[str, Any] = {}
        self.asked = {"strict": 0, "lenient": 0}  # requests by the builtin errors they asked for
        self.engine = self.compile(self.policies, self.data)

    def compile(self, policies: dict[str, str], data: dict[str, Any], changed: str = "") -> Any:
        engine = self.bindings.OpaEngine()
        try:
            for policy_id, raw in policies.items():
                engine.add_policy(policy_id, raw)
            engine.add_data(copy.deepcopy(data))
            engine.eval_query("true")  # compiles every module: type errors and recursion surface here
        except self.bindings.OpaError as exc:
            engine.close()
            raise CompileError(exc.message, changed) from None
        return engine

    def replace(self, policies: dict[str, str], data: dict[str, Any], changed: str = "") -> None:
        if policies == self.policies and data == self.data:
            return  # OPA compiles them again, to the same outcome; an engine pushing its bundle again costs nothing
        engine = self.compile(policies, data, changed)
        self.engine.close()
        self.engine, self.policies, self.data = engine, policies, data

    def evaluate(self, path: list[str], input_doc: Any = None) -> tuple[bool, Any]:
        """(defined, value) of data.<path>; raises the bridge's OpaError on an evaluation error."""
        try:
            return True, self.engine.eval_document(".".join(path), input_doc)
        except self.bindings.OpaUndefinedError:
            return False, None


def segments(request: Request) -> list[str]:
    return [s for s in request.path_params.get("path", "").split("/") if s]


def error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status)


def build_app(token: str | None = None, mode: str = "lenient") -> Starlette:
    store = Store(mode)

    async def health(request: Request) -> Response:
        return JSONResponse({})

    async def list_policies(request: Request) -> Response:
        return JSONResponse({"result": [{"id": k, "raw": v} for k, v in store.policies.items()]})

    async def policy(request: Request) -> Response:
        policy_id = request.path_params["id"]
        if request.method == "PUT":
            raw = (await request.body()).decode("utf-8")
            try:
                store.replace({**store.policies, policy_id: raw}, store.data, changed=policy_id)
            except CompileError as exc:
                return JSONResponse(exc.body(), status_code=400)
            return JSONResponse({})
        if policy_id not in store.policies:
            return error(404, "resource_not_found", f'storage_not_found_error: policy id "{policy_id}"')
        if request.method == "DELETE":
            try:
                store.replace({k: v for k, v in store.policies.items() if k != policy_id}, store.data, policy_id)
            except CompileError as exc:
                return JSONResponse(exc.body(), status_code=400)
            return JSONResponse({})
        return JSONResponse({"result": {"id": policy_id, "raw": store.policies[policy_id]}})

    async def data(request: Request) -> Response:
        path = segments(request)
        if request.method in ("GET", "POST"):
            input_doc = None
            if request.method == "POST":
                body = await request.body()
                if body:
                    try:
                        parsed = json.loads(body)
                    except json.JSONDecodeError as exc:
                        return error(400, "invalid_parameter", f"body contains malformed input document: {exc}")
                    input_doc = parsed.get("input") if isinstance(parsed, dict) else None
            asked = request.query_params.get("strict-builtin-errors", "").lower() == "true"
            store.asked["strict" if asked else "lenient"] += 1
            try:
                defined, value = store.evaluate(path, input_doc)
            except store.bindings.OpaError as exc:
                return error(500, "internal_error", exc.message)
            return JSONResponse({"result": value} if defined else {})
        new = copy.deepcopy(store.data)
        if request.method == "DELETE":
            parent = walk(new, path[:-1], create=False)
            if not path or parent is None or path[-1] not in parent:
                return error(404, "resource_not_found", f"storage_not_found_error: {'/'.join(path)}: document missing")
            del parent[path[-1]]
        elif request.method == "PUT":
            value = json.loads(await request.body() or b"null")
            if not path:
                if not isinstance(value, dict):
                    return error(400, "invalid_parameter", "root document must be an object")
                new = value
            else:
                walk(new, path[:-1], create=True)[path[-1]] = value
        else:  # PATCH
            for op in json.loads(await request.body() or b"[]"):
                target = path + [s for s in op["path"].split("/") if s]
                parent = walk(new, target[:-1], create=op["op"] != "remove")
                if op["op"] == "remove":
                    if parent is None or target[-1] not in parent:
                        return error(404, "resource_not_found", f"storage_not_found_error: {op['path']}")
                    del parent[target[-1]]
                else:
                    parent[target[-1]] = op["value"]
        try:
            store.replace(store.policies, new)
        except CompileError as exc:
            return JSONResponse(exc.body(), status_code=400)
        return Response(status_code=204)

    async def query(request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        try:
            results = store.engine.eval_query(body["query"], body.get("input"))
        except store.bindings.OpaError as exc:
            return error(400, "invalid_parameter", exc.message)
        return JSONResponse({"result": results})

    async def config(request: Request) -> Response:
        labels = {"id": "opa-golib-stand-in", "version": OPA_VERSION}
        return JSONResponse({"result": {"labels": labels, "stand_in": {"builtin_errors": mode, "asked": store.asked}}})

    app = Starlette(
        routes=[
            Route("/health", health),
            Route("/v1/policies", list_policies),
            Route("/v1/policies/", list_policies),
            Route("/v1/policies/{id:path}", policy, methods=["GET", "PUT", "DELETE"]),
            Route("/v1/data", data, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/v1/data/{path:path}", data, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/v1/query", query, methods=["POST"]),
            Route("/v1/config", config),
        ]
    )
    if token is None:
        return app

    async def authenticated(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1"):
            headers = dict(scope["headers"])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                response = error(401, "unauthorized", "request rejected by administrative policy")
                await response(scope, receive, send)
                return
        await app(scope, receive, send)

    return authenticated  # type: ignore[return-value]


def walk(tree: dict[str, Any], path: list[str], create: bool) -> dict[str, Any] | None:
    node: Any = tree
    for segment in path:
        if not isinstance(node, dict):
            return None
        if segment not in node:
            if not create:
                return None
            node[segment] = {}
        node = node[segment]
    return node if isinstance(node, dict) else None


def main() -> None:
    parser = argparse.ArgumentParser(description="OPA's REST API in front of the real OPA evaluator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8181)
    parser.add_argument("--token", help="require Authorization: Bearer TOKEN on /v1")
    parser.add_argument("--builtin-errors", choices=MODES, default="lenient")
    args = parser.parse_args()
    app = build_app(args.token, args.builtin_errors)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
