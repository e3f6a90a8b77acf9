"""A real OPA server as the policy engine, over OPA's REST API (opa-python-client).

The gateway stays the source of truth for policy: it pushes every module of its bundle with
``PUT /v1/policies/gateway/<file>`` (rego_compat off: a policy is never rewritten behind your back)
and the roles with ``PUT /v1/data/roles``, then asks ``POST /v1/data/gateway/decision`` for each call.
Changed files and changed roles are pushed again (looked at no more than once a second); a module OPA
refuses leaves the previous one in force, and the reason shows in ``status()``. Any transport or server
error is a deny. Every query asks for strict builtin errors: a builtin that fails (``glob.match`` of a pattern
it cannot parse) fails the query, and so the decision is a deny, as in the embedded engine; an OPA server's
default would make the expression undefined instead, which can turn ``not glob.match(...)`` true.

    engine = OpaEngine(Path("policies"), gateway.roles, url="http://127.0.0.1:8181")   # or {"roles": {...}}
    decision = await engine.decide(input_doc)
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import structlog
from opa_client.opa_async import AsyncOpaClient

from gateway.errors import ConfigError
from gateway.policy.bundle import PACKAGE, RULE, bundle_look, policy_files
from gateway.policy.engine import engine_error, to_decision
from gateway.policy.lint import layout_problems
from gateway.policy.reload import RELOAD_CHECK_S, PolicyData, Watch, policy_data, revision_of
from gateway.types import Decision, JSONObject

log = structlog.get_logger("gateway.policy")
POLICY_PREFIX = "gateway"
# OPA's query parameter: a builtin's error fails the query (the default makes the expression undefined)
STRICT = {"strict-builtin-errors": "true"}


class OpaEngine:
    name = "opa"

    def __init__(
        self, directory: Path, data: JSONObject | PolicyData, url: str, token: str | None = None, timeout: float = 2.0
    ) -> None:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError(f"policy.opa_url {url!r} must be http(s)://HOST:PORT")
        self.directory = directory
        self.data = policy_data(data)
        self.url = url
        self._client_args = {
            "host": parsed.hostname,
            "port": parsed.port or (443 if parsed.scheme == "https" else 8181),
            "ssl": parsed.scheme == "https",
            "token": token,
            "timeout": timeout,
            "retries": 1,
        }
        self._client: AsyncOpaClient | None = None
        self._pushed: Hashable = None  # the files and data as last pushed
        self.watch = Watch(bundle_look(directory, self.data), interval=RELOAD_CHECK_S)
        self.last_error: str | None = None

    async def decide(self, input_doc: JSONObject) -> Decision:
        try:
            client = await self._ready()
            answer = await client.query_rule(input_doc, PACKAGE, RULE, STRICT)
            if not (isinstance(answer, dict) and "result" in answer):
                # Undefined: OPA lost the policy (a restart without bundles) or never took it. Push again
                # once and ask again; if it is still undefined, the decision is a deny that says so.
                self._pushed = None
                client = await self._ready()
                answer = await client.query_rule(input_doc, PACKAGE, RULE, STRICT)
        except Exception as exc:  # unreachable server, HTTP error, bad JSON: all deny
            return engine_error(f"OPA at {self.url}: {type(exc).__name__}: {str(exc)[:300]}")
        return to_decision(answer.get("result") if isinstance(answer, dict) else None)

    async def query(self, rule: str, input_doc: JSONObject) -> Any:
        client = await self._ready()
        package, _, name = rule.rpartition(".")
        answer = await client.query_rule(input_doc, package, name, STRICT)
        return answer.get("result") if isinstance(answer, dict) else None

    async def push(self) -> None:
        """Push the bundle and the roles; raises when OPA refuses a module (the old one stays in force).

        OPA compiles every module with the ones it already holds, so a module that calls a function of
        a module not pushed yet (paths.rego calls scope.matches_any) is refused at first: refused
        modules are pushed again while each round gets more accepted. Modules under the gateway's
        prefix that are no longer in the bundle are deleted, so a removed file stops deciding.
        """
        client = await self._connect()
        current = self.watch.look(force=True)
        for name, value in self.data.document().items():  # the roles
            await client.update_or_create_data(value, name)
        modules = {
            f"{POLICY_PREFIX}/{path.relative_to(self.directory).as_posix()}": path.read_text(encoding="utf-8")
            for path in policy_files(self.directory)
        }
        unreached = layout_problems([(name.removeprefix(POLICY_PREFIX + "/"), text) for name, text in modules.items()])
        if unreached:  # as the embedded engine refuses such a bundle (gateway/policy/bundle.py)
            self.last_error = "; ".join(str(problem) for problem in unreached[:3])
            raise ConfigError(f"the policy bundle is refused: {self.last_error}")
        stale = [p for p in await client.get_policies_list() if p.startswith(f"{POLICY_PREFIX}/") and p not in modules]
        pending: dict[str, str | None] = {**dict.fromkeys(stale), **modules}  # None: delete
        failures: dict[str, str] = {}
        while pending:
            failures = {}
            for endpoint, text in pending.items():
                try:
                    if text is None:
                        await client.delete_policy(endpoint)
                    else:
                        await client.update_policy_from_string(text, endpoint, rego_compat=False)
                except Exception as exc:
                    failures[endpoint] = opa_error(exc) if text is not None else f"not deleted: {opa_error(exc)}"
            if len(failures) == len(pending):
                break
            pending = {endpoint: pending[endpoint] for endpoint in failures}
        errors = [f"{endpoint.removeprefix(POLICY_PREFIX + '/')}: {message}" for endpoint, message in failures.items()]
        self._pushed = current
        self.last_error = "; ".join(errors) or None
        if errors:
            log.error("OPA refused policy modules; the previous ones stay in force", errors=errors)
            raise ConfigError(f"OPA refused the policy: {self.last_error}")

    def status(self) -> JSONObject:
        return {"engine": self.name, "url": self.url, "directory": str(self.directory), "last_error": self.last_error}

    def revision(self) -> str:
        """The revision of the files and roles (looked at no more than once a second); the next decision
        pushes them to OPA first when they changed, so a decision made after this answered comes from them."""
        return revision_of(self.watch.look())

    async def _ready(self) -> AsyncOpaClient:
        if self._pushed is None or self._pushed != self.watch.look():
            with contextlib.suppress(ConfigError):  # reported in status(); OPA keeps what it accepted
                await self.push()
        return await self._connect()

    async def _connect(self) -> AsyncOpaClient:
        if self._client is None:
            client = AsyncOpaClient(**self._client_args)
            await client.__aenter__()
            self._client = client
        return self._client

    def start(self) -> None:
        return None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close_connection()
            self._client = None


def opa_error(exc: BaseException) -> str:
    """OPA's own words for a refused request: the first error's message and location when it gave one."""
    errors = getattr(exc, "errors", None)
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        first = errors[0]
        where = first.get("location") or {}
        at = f" at {where.get('file')}:{where.get('row')}:{where.get('col')}" if where else ""
        return f"{first.get('code', 'error')}{at}: {str(first.get('message', ''))[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
