"""A stand-in for OPA's REST API, backed by regorus. It is NOT OPA.

No OPA binary can be installed on this machine (see /work/shared/notes/rego-engines-and-shell-parsing.md),
so the OPA engine's tests talk to this small server instead. It speaks the parts of OPA's documented
REST API (https://www.openpolicyagent.org/docs/rest-api) that ``gateway.policy.opa.OpaEngine`` and
opa-python-client use, with OPA's status codes and response shapes:

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

Like OPA, a policy is compiled together with every other module when it is PUT, and a module that does
not compile (a syntax error, or a call to a function no module defines) is refused with 400 while the
previous modules stay in force. "Compiling" here means loading the modules into a fresh regorus engine
and evaluating all of ``data`` once, which is where regorus reports unknown functions and unsafe
variables. With ``--token`` every /v1 request needs ``Authorization: Bearer TOKEN`` (OPA's
``--authentication=token`` with an authorization policy that checks it); /health stays open.

    python tests/opa_rest_server.py --port 8181 [--host 127.0.0.1] [--token SECRET]
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import regorus
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

LOCATION = re.compile(r"-->\s*(?P<file>[^\s:]+):(?P<row>\d+):(?P<col>\d+)")


def engine_message(exc: BaseException) -> str:
    text = str(exc).split("Stack backtrace:")[0].strip() or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


class CompileError(Exception):
    """A module OPA would refuse, with OPA's error code and the location regorus reported."""

    def __init__(self, file: str, exc: BaseException, code: str = "") -> None:
        self.message = engine_message(exc)
        found = LOCATION.search(str(exc))
        self.file = found.group("file") if found else file
        self.row = int(found.group("row")) if found else 0
        self.col = int(found.group("col")) if found else 0
        parse = any(word in self.message for word in ("expecting", "unexpected", "invalid", "unterminated"))
        self.code = code or ("rego_parse_error" if parse else "rego_compile_error")
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        return {
            "code": "invalid_parameter",
            "message": "error(s) occurred while compiling module(s)",
            "errors": [
                {
                    "code": self.code,
                    "message": self.message,
                    "location": {"file": self.file, "row": self.row, "col": self.col},
                }
            ],
        }


class Store:
    """Policies and data, and the regorus engine compiled from them (used on the event loop thread only:
    regorus engines are bound to the thread that made them)."""

    def __init__(self) -> None:
        self.policies: dict[str, str] = {}
        self.data: dict[str, Any] = {}
        self.engine = self.compile(self.policies, self.data)

    @staticmethod
    def compile(policies: dict[str, str], data: dict[str, Any], changed: str = "") -> regorus.Engine:
        engine = regorus.Engine()
        for policy_id, raw in policies.items():
            try:
                engine.add_policy(policy_id, raw)
            except Exception as exc:
                raise CompileError(policy_id, exc) from None
        undefined = undefined_calls(json.loads(engine.get_ast_as_json()))
        if undefined:
            file, row, col, name = undefined[0]
            problem = Exception(f"--> {file}:{row}:{col}\nundefined function {name}")
            raise CompileError(file, problem, code="rego_type_error")
        engine.add_data(copy.deepcopy(data))
        engine.set_input({})
        try:
            engine.eval_query_as_json("data")  # unknown functions and unsafe variables of reached rules surface here
        except Exception as exc:
            raise CompileError(changed, exc) from None
        return engine

    def put_policy(self, policy_id: str, raw: str) -> None:
        policies = {**self.policies, policy_id: raw}
        self.engine = self.compile(policies, self.data, changed=policy_id)
        self.policies = policies

    def delete_policy(self, policy_id: str) -> None:
        policies = {k: v for k, v in self.policies.items() if k != policy_id}
        self.engine = self.compile(policies, self.data, changed=policy_id)
        self.policies = policies

    def set_data(self, data: dict[str, Any]) -> None:
        self.engine = self.compile(self.policies, data)
        self.data = data

    def evaluate(self, path: list[str], input_doc: Any = None) -> tuple[bool, Any]:
        """(defined, value) of data.<path>; input is undefined unless given."""
        query = "data" + "".join(f"[{json.dumps(segment)}]" for segment in path)
        self.engine.set_input(input_doc if input_doc is not None else {})
        results = self.engine.eval_query(query)["result"]
        if not results:
            return False, None
        return True, results[0]["expressions"][0]["value"]


# --- OPA's type check of calls: every call to a function under data must name a defined function ------


def dotted(node: Any) -> list[str] | None:
    """A reference made of names (``a.b.c``) as a list, or None for anything else."""
    if "Var" in node:
        return [node["Var"]["value"]]
    if "RefDot" in node:
        head = dotted(node["RefDot"]["refr"])
        return None if head is None else [*head, node["RefDot"]["field"][1]]
    return None


def walk_calls(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if "Call" in node and isinstance(node["Call"], dict) and "fcn" in node["Call"]:
            yield node["Call"]
        for value in node.values():
            yield from walk_calls(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk_calls(value)


def undefined_calls(modules: list[dict[str, Any]]) -> list[tuple[str, int, int, str]]:
    """Calls like ``alias.f(x)`` or ``data.pkg.f(x)`` whose function no module defines. OPA refuses such a
    module when it is PUT (rego_type_error); regorus only notices when an evaluation reaches the call."""
    defined: set[str] = set()
    for module in modules:
        package = ".".join(dotted(module["ast"]["package"]["refr"]) or [])
        for rule in module["ast"]["rules"]:
            head = rule.get("Spec", {}).get("head", {})
            if "Func" in head:
                defined.add(f"data.{package}." + ".".join(dotted(head["Func"]["refr"]) or []))
    problems = []
    for module in modules:
        source = module["source"]["contents"]
        aliases = {}
        for imported in module["ast"]["imports"]:
            path = dotted(imported["refr"]) or []
            if path[:1] == ["data"]:
                alias = source[imported["as"]["start"] : imported["as"]["end"]] if imported.get("as") else path[-1]
                aliases[alias] = ".".join(path)
        for call in walk_calls(module["ast"]["rules"]):
            name = dotted(call["fcn"])
            if not name or (name[0] != "data" and name[0] not in aliases):
                continue  # a builtin, or a function of the same package (regorus checks those)
            full = ".".join([aliases.get(name[0], "data"), *name[1:]])
            if full not in defined:
                span = call["span"]
                problems.append((module["source"]["file"], span["line"], span["col"], full))
    return problems


def segments(request: Request) -> list[str]:
    return [s for s in request.path_params.get("path", "").split("/") if s]


def jsonable(value: Any) -> Any:
    """regorus returns Rego sets as Python sets; OPA renders them as JSON arrays."""
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status)


def build_app(token: str | None = None) -> Starlette:
    store = Store()

    async def health(request: Request) -> Response:
        return JSONResponse({})

    async def list_policies(request: Request) -> Response:
        return JSONResponse({"result": [{"id": k, "raw": v} for k, v in store.policies.items()]})

    async def policy(request: Request) -> Response:
        policy_id = request.path_params["id"]
        if request.method == "PUT":
            raw = (await request.body()).decode("utf-8")
            try:
                store.put_policy(policy_id, raw)
            except CompileError as exc:
                return JSONResponse(exc.body(), status_code=400)
            return JSONResponse({})
        if policy_id not in store.policies:
            return error(404, "resource_not_found", f'storage_not_found_error: policy id "{policy_id}"')
        if request.method == "DELETE":
            try:
                store.delete_policy(policy_id)
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
            try:
                defined, value = store.evaluate(path, input_doc)
            except Exception as exc:
                return error(500, "internal_error", engine_message(exc))
            return JSONResponse({"result": jsonable(value)} if defined else {})
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
            store.set_data(new)
        except CompileError as exc:
            return JSONResponse(exc.body(), status_code=400)
        return Response(status_code=204)

    async def query(request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        store.engine.set_input(body.get("input", {}))
        try:
            results = store.engine.eval_query(body["query"])["result"]
        except Exception as exc:
            return error(400, "invalid_parameter", engine_message(exc))
        return JSONResponse({"result": [jsonable(r["bindings"]) for r in results]})

    async def config(request: Request) -> Response:
        return JSONResponse({"result": {"labels": {"id": "regorus-stand-in", "version": "not-opa"}}})

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
    parser = argparse.ArgumentParser(description="a regorus-backed stand-in for OPA's REST API (not OPA)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8181)
    parser.add_argument("--token", help="require Authorization: Bearer TOKEN on /v1")
    args = parser.parse_args()
    uvicorn.run(build_app(args.token), host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
