"""What the HTTP front door tells clients about its credentials: RFC 9728 metadata and RFC 6750 challenges.

Every 401 from /mcp names the reason and where the metadata is, so a client can show the gateway's reason
instead of guessing at OAuth:

    WWW-Authenticate: Bearer error="invalid_token", error_description="token expired: ...",
                      resource_metadata="http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp"

The metadata lists the external issuer as the authorization server when one is configured. When only the
gateway's own tokens are accepted it lists none (RFC 9728 makes the member optional): no OAuth server issues
them, `gateway token issue` does, and naming one would send clients into an OAuth flow that cannot succeed.

    resource = ProtectedResource(config.identity, security)   # security: the /mcp transport's host checks
    Starlette(routes=[..., *resource.routes()])                # the metadata (both forms) and /auth
    resource.challenge(request, reason, missing=False)          # the WWW-Authenticate value
"""

from __future__ import annotations

import re

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from gateway.config import IdentityConfig

METADATA_PATH = "/.well-known/oauth-protected-resource"
RESOURCE_PATH = "/mcp"
HELP_PATH = "/auth"
# what may stand inside a quoted-string of the challenge: printable ASCII without the quote and backslash
_UNQUOTABLE = re.compile(r'[^\x20-\x7e]|["\\]')


class ProtectedResource:
    def __init__(self, identity: IdentityConfig, security: TransportSecuritySettings, name: str) -> None:
        self.identity = identity
        self.name = name
        self.hosts = TransportSecurityMiddleware(security)  # the same Host/Origin rules as /mcp

    def routes(self) -> list[Route]:
        return [
            Route(METADATA_PATH, self.metadata, methods=["GET"]),
            Route(METADATA_PATH + RESOURCE_PATH, self.metadata, methods=["GET"]),
            Route(HELP_PATH, self.help, methods=["GET"]),
        ]

    def base_url(self, conn: HTTPConnection) -> str | None:
        """The gateway's URL as this client reached it, or None when the Host header is not an allowed one
        (the metadata never reflects a host the transport would refuse)."""
        host = conn.headers.get("host")
        checked = self.hosts.settings.enable_dns_rebinding_protection
        # the SDK's own Host rule (private, but pinned with mcp==2.3.*): one rule for /mcp and its metadata
        if not host or (checked and not self.hosts._validate_host(host)):
            return None
        return f"{conn.url.scheme}://{host}"

    def metadata_url(self, conn: HTTPConnection) -> str | None:
        base = self.base_url(conn)
        return f"{base}{METADATA_PATH}{RESOURCE_PATH}" if base else None

    async def metadata(self, request: Request) -> Response:
        """GET /.well-known/oauth-protected-resource[/mcp]: the RFC 9728 document (no credential needed)."""
        refused = await self.hosts.validate_request(request)
        if refused is not None:
            return refused
        base = self.base_url(request)
        if base is None:  # no Host header (HTTP/1.0) where any host is served: nothing to name the resource by
            return JSONResponse({"error": "invalid_request", "error_description": "a Host header is required"}, 400)
        document: dict[str, object] = {
            "resource": f"{base}{RESOURCE_PATH}",
            "bearer_methods_supported": ["header"],
            "resource_name": self.name,
            "resource_documentation": self.identity.documentation or f"{base}{HELP_PATH}",
        }
        external = self.identity.external_issuer
        if external is not None:
            document["authorization_servers"] = [external.issuer]
            document["resource_signing_alg_values_supported"] = list(external.algorithms)
        return JSONResponse(document, headers={"cache-control": "no-store"})

    async def help(self, request: Request) -> Response:
        """GET /auth: which credentials this gateway accepts and how to get one, for people."""
        external = self.identity.external_issuer
        lines = [
            f"{self.name} accepts a bearer token in the Authorization header of every /mcp request.",
            "",
            f"Its own tokens (issuer {self.identity.issuer!r}): ask the operator, who runs",
            "  gateway token issue --role ROLE --agent NAME --ttl 8h",
        ]
        if external is not None:
            lines += [
                "",
                f"Tokens from the identity provider {external.issuer!r} (audience {external.audience!r}):",
                f"  the {external.agent_claim!r} claim names the agent; the {external.roles_claim!r} claim maps",
                "  to the gateway role: " + ", ".join(f"{k} -> {v}" for k, v in sorted(external.roles.items())),
            ]
        lines += ["", "A refused token gets 401 with the reason in WWW-Authenticate (error_description) and the body."]
        return PlainTextResponse("\n".join(lines) + "\n")

    def challenge(self, conn: HTTPConnection, reason: str, missing: bool) -> str:
        """The WWW-Authenticate value for a 401: RFC 6750 §3 (no error code when no credential was sent)
        and RFC 9728 §5.1 (where the metadata is)."""
        params = [] if missing else ['error="invalid_token"']
        params.append(f'error_description="{_UNQUOTABLE.sub(_quotable, reason)}"')
        metadata = self.metadata_url(conn)
        if metadata is not None:
            params.append(f'resource_metadata="{metadata}"')
        return "Bearer " + ", ".join(params)


def _quotable(match: re.Match[str]) -> str:
    return "'" if match.group() == '"' else "?"
