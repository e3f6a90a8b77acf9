"""The commands of ``gateway`` (the parser is in ``gateway.cli.parser``).

Each imports what it needs when it runs: importing this module costs nothing, so a command pays only for
its own work. Errors are ``GatewayError``s, which ``gateway.cli.main`` prints as one line.

    cmd_check(build_parser().parse_args(["check", "--role", "worker", "--tool", "fs_read"]))
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli.output import Column, block, clean, emit, gateway_command, show_check, table, wants_json

if TYPE_CHECKING:
    from gateway.config import GatewayConfig
    from gateway.runtime import Gateway


def load_config(args: argparse.Namespace) -> GatewayConfig:
    from gateway.config import GatewayConfig

    return GatewayConfig.load(args.config)


def open_gateway(args: argparse.Namespace) -> Gateway:
    from gateway.runtime import Gateway

    # a single command decides at most once: in this process (serve decides in worker processes)
    return Gateway(load_config(args), isolated=False)


def invalid(message: str) -> Exception:
    from gateway.errors import InvalidRequest

    return InvalidRequest(message)


def read_json(path: str, what: str) -> Any:
    """A JSON file, or one clear error naming it."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid(f"cannot read {what} {path}: {exc}") from None


# --- commands -------------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    from gateway.bootstrap import init_workspace

    config = init_workspace(
        Path(args.dir), force=args.force, state_dir=Path(args.state_dir) if args.state_dir else None
    )
    print(f"workspace  {config.workspace}", file=sys.stderr)
    print(f"config     {config.source}", file=sys.stderr)
    print(
        f"state dir  {config.state} (keys, store, roles, policies: outside the workspace, owner-only)", file=sys.stderr
    )
    print(f"worktrees  {config.worktrees}", file=sys.stderr)
    command = gateway_command()
    print(
        f"next: {command} token issue --role worker --agent w1, then {command} serve --http 127.0.0.1:8787",
        file=sys.stderr,
    )
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from gateway.bootstrap import migrate_state

    moved = migrate_state(load_config(args), state_dir=Path(args.state_dir) if args.state_dir else None)
    if wants_json(args):
        emit(moved)
        return 0
    print(f"moved the state dir {moved['from']} to {moved['state_dir']}")
    print(f"worktrees  {moved['worktrees_dir']} ({len(moved['worktrees'])} moved)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from gateway.telemetry import configure_logging

    configure_logging(args.log_level)
    from gateway.listen import parse_listen

    config = load_config(args)
    if args.stdio:
        return serve_stdio(config)
    host, port = parse_listen(args.http or config.listen)
    return serve_http(config, host, port, workers=args.workers or config.workers, log_level=args.log_level)


def serve_stdio(config: GatewayConfig) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    from gateway.cli import gc_as_default
    from gateway.runtime import Gateway
    from gateway.server import ScreenedReads, build_server

    gateway = Gateway(config)  # decides in worker processes, each decision bounded by the deadline
    token = os.environ.get("GATEWAY_TOKEN")
    principal = gateway.tokens.verify(token)  # checked at start: a bad token never serves a single call
    print(f"gateway: serving {principal.agent} ({principal.role}) over stdio", file=sys.stderr)
    server = build_server(gateway, token=token)
    gc_as_default()

    async def run() -> None:
        async with gateway.running(), stdio_server() as (read, write):
            screened = ScreenedReads(read, write, gateway, token)  # a line that is not valid Unicode: answered
            await server.run(screened, write, server.create_initialization_options())

    anyio.run(run)
    return 0


def serve_http(config: GatewayConfig, host: str, port: int, workers: int = 1, log_level: str = "info") -> int:
    """One process, or ``workers`` processes on one socket (the supervisor starts a process per worker,
    replaces one that dies and stops them all on SIGTERM or SIGINT). Each worker process builds its own
    Gateway (gateway.server.worker_app); they share the store, the state dir and the workspace. uvloop and
    httptools serve when installed (the ``fast`` extra). The socket is bound here, first: an address in use
    is one error line (exit 2), never a "serving" line and then an exit."""
    import uvicorn

    from gateway.cli import gc_as_default
    from gateway.listen import listen_socket
    from gateway.runtime import Gateway
    from gateway.server import WORKER_ENV, AnnouncedServer, http_app

    gateway = Gateway(config)  # a config, roles or policy that does not load stops here, before any worker
    gc_as_default()
    sock = listen_socket(host, port)
    url = f"http://{host}:{port}/mcp"
    options: dict[str, Any] = {"host": host, "port": port, "log_level": "warning", "access_log": False}
    options["timeout_graceful_shutdown"] = config.limits.shutdown_grace_s
    if workers <= 1:
        server = AnnouncedServer(uvicorn.Config(http_app(gateway, host=host), **options), url)
        # uvicorn exits when the start-up failed: said below, with the gateway's code
        with serving_file(config, host, port), contextlib.suppress(SystemExit):
            server.run(sockets=[sock])
        return 0 if server.started else did_not_start()
    gateway.db.close()  # the workers open their own; this one only proved that everything loads
    assert config.source is not None
    os.environ[WORKER_ENV] = json.dumps({"config": str(config.source), "host": host, "log_level": log_level})
    print(f"gateway: serving {url} with {workers} worker processes (supervisor pid {os.getpid()})", file=sys.stderr)
    import logging

    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    settings = uvicorn.Config("gateway.server:worker_app", factory=True, workers=workers, **options)
    # the supervisor says when a worker died and was replaced, and when it stops them; workers stay quiet
    logging.getLogger("uvicorn.error").setLevel(logging.INFO)
    supervisor = Multiprocess(settings, sockets=[sock])
    with serving_file(config, host, port):
        supervisor.run()
    failed = any(worker.process.exitcode == STARTUP_FAILURE for worker in supervisor.processes)
    return did_not_start() if failed else 0


@contextlib.contextmanager
def serving_file(config: GatewayConfig, host: str, port: int) -> Iterator[None]:
    """``<state>/serving.json`` while this process serves: where ``gateway check`` and the command hook find
    it (gateway/fast.py). Removed at the end unless another gateway process wrote its own since."""
    from gateway.fast import SERVING_FILE, serving_record

    assert config.source is not None
    path = config.state / SERVING_FILE
    record = serving_record(host, port, config.source.resolve())
    written = path.with_name(f".{SERVING_FILE}.{os.getpid()}")
    written.write_text(json.dumps(record))
    written.chmod(0o600)
    written.replace(path)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == record["pid"]:
                path.unlink()


def did_not_start() -> int:
    from gateway.errors import ConfigError

    raise ConfigError("the gateway did not start: its start-up failed (the lines above say why)")


def cmd_token_issue(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    gateway.roles.require(args.role)
    token, claims = issue_token(gateway, args.role, args.agent, args.task, args.ttl)
    if args.json:
        emit({"token": token, "claims": claims})
        return 0
    print(token)  # alone on stdout, so $(gateway token issue ...) is the token
    if sys.stderr.isatty():
        from datetime import UTC, datetime

        expires = datetime.fromtimestamp(claims["exp"], UTC).isoformat(timespec="seconds")
        print(f"{args.agent} as {args.role}, jti {claims['jti']}, expires {expires}", file=sys.stderr)
    return 0


def issue_token(gateway: Gateway, role: str, agent: str, task: str | None, ttl_s: int) -> tuple[str, dict[str, Any]]:
    """A signed credential, and the ledger row saying this gateway issued it (which `token revoke` reads)."""
    token, claims = gateway.tokens.issue(role=role, agent=agent, task=task, ttl_s=ttl_s)
    gateway.ledger.append(
        {
            "kind": "token",
            "outcome": "ok",
            "principal": {"agent": agent, "role": role, "task": task},
            "detail": {"action": "issue", "jti": claims["jti"], "exp": claims["exp"]},
        }
    )
    return token, claims


def cmd_token_revoke(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    if args.external:
        if gateway.config.identity.external_issuer is None:
            raise invalid("--external: gateway.yaml names no identity.external_issuer, so no such token is accepted")
    elif not issued_here(gateway, args.jti):
        raise invalid(
            f"{clean(args.jti)[:80]!r} is not the jti of a token this gateway issued, so nothing was revoked "
            "('gateway token issue --json' prints a token's jti; a token of the external issuer: add --external)"
        )
    fresh = gateway.revocations.revoke(args.jti, reason=args.reason)
    gateway.ledger.append({"kind": "token", "outcome": "ok", "detail": {"action": "revoke", "jti": args.jti}})
    print(f"revoked {args.jti}" if fresh else f"{args.jti} was already revoked", file=sys.stderr)
    return 0


def issued_here(gateway: Gateway, jti: str) -> bool:
    """Whether the ledger records this gateway issuing a token with this jti (its jtis are hex, so any other
    text is none of them). Reads only the ledger's token rows that name the jti."""
    if not jti.isalnum():
        return False
    rows = gateway.ledger.of_kind("token", containing=f'"{jti}"', limit=1_000_000)
    return any(row.detail.get("action") == "issue" and row.detail.get("jti") == jti for row in rows)


def cmd_keys(args: argparse.Namespace) -> int:
    from gateway.identity.keys import KeyRing

    ring = KeyRing(load_config(args).keys_dir)
    if args.keys_command == "rotate":
        print(ring.create())
    elif args.keys_command == "remove":
        if not args.kid:
            raise invalid("keys remove needs the KID to remove (gateway keys list shows them)")
        ring.remove(args.kid)
        print(f"removed {args.kid}; tokens signed with it no longer verify", file=sys.stderr)
    elif wants_json(args):
        emit({"active": ring.active_kid(), "kids": ring.kids()})
    else:
        active = ring.active_kid()
        rows = [{"kid": kid, "use": "signs and verifies" if kid == active else "verifies"} for kid in ring.kids()]
        table(rows, [("kid", "KID"), ("use", "USE")], empty="no signing keys")
    return 0


def cmd_attest_check(args: argparse.Namespace) -> int:
    """``gateway attest verify|show COMMIT``: the check is recorded in the ledger, passed or failed."""
    from gateway.attest.errors import AttestationError

    attestations = open_gateway(args).attestations
    keys = read_json(args.jwks, "the JWK Set") if args.jwks else None
    envelope = Path(args.envelope).read_text(encoding="utf-8", errors="replace") if args.envelope else None
    try:
        result = attestations.verify(args.commit, keys, envelope)
    except AttestationError as exc:
        attestations.record_check(args.commit, exc)
        if wants_json(args):
            emit({"verified": False, **exc.as_dict()})
        print(f"gateway: attestation not verified ({exc.code}): {exc.message}", file=sys.stderr)
        return exc.exit_code
    attestations.record_check(args.commit, result)
    if args.attest_command == "show" or wants_json(args):
        emit({"verified": True, **result})
    else:
        predicate = result["statement"]["predicate"]
        print(f"verified: {result['commit']} (tree {result['tree'][:12]}), signed by {result['kid']}")
        intent, task, policy = predicate["intent"]["id"][:12], predicate["task"]["id"], predicate["policy"]["revision"]
        print(f"intent {intent}, task {task}, policy {policy}")
        for step in predicate["steps"]:
            print(f"  {step['step']:<20} {step.get('agent') or '-'} ({step.get('role') or '-'})")
    return 0


def cmd_attest_keys(args: argparse.Namespace) -> int:
    emit(open_gateway(args).attestations.jwks())
    return 0


def cmd_attest_rotate(args: argparse.Namespace) -> int:
    print(open_gateway(args).attestations.rotate())
    return 0


def cmd_artifacts(args: argparse.Namespace) -> int:
    artifacts = open_gateway(args).artifacts
    if args.artifacts_command == "conflict":
        emit(artifacts.conflict(args.conflict_id))
    elif args.artifacts_command == "resolve":
        content = Path(args.file).read_text(encoding="utf-8")
        emit(artifacts.resolve(args.conflict_id, content, {"agent": args.by, "role": "person"}))
    elif args.artifacts_command == "show":
        shown = artifacts.get(args.key, args.revision)
        emit(shown) if wants_json(args) else block(artifact_fields(shown))
    elif wants_json(args):
        emit(artifacts.log(args.key))
    else:
        history = artifacts.log(args.key)
        rows = [
            {
                "revision": r["revision"],
                "base": r["base"],
                "digest": r["digest"][:19],
                "by": f"{r['provenance'].get('agent')} ({r['provenance'].get('role')})",
                "task": r["provenance"].get("task") or "-",
                "time": r["time"][:19],
            }
            for r in history["revisions"]
        ]
        columns = [
            ("revision", "REV"),
            ("base", "BASE"),
            ("digest", "DIGEST"),
            ("by", "BY"),
            ("task", "TASK"),
            ("time", "TIME"),
        ]
        table(rows, columns, empty=f"no revisions of {args.key}")
        for c in history["conflicts"]:
            print(
                f"conflict {c['id']} ({c['state']}): base {c['base']}, current {c['current']['revision']}, "
                f"theirs by {c['theirs']['provenance'].get('agent')}"
            )
    return 0


def cmd_ledger_verify(args: argparse.Namespace) -> int:
    from gateway.ledger.chain import Ledger

    report = Ledger.for_config(load_config(args)).verify()
    fields = {
        "ok": report.ok,
        "checked": report.checked,
        "first_bad": report.first_bad,
        "reason": report.reason,
        "authenticated": report.authenticated,
        "legacy_unauthenticated_rows": report.legacy,
    }
    emit(fields) if wants_json(args) else block(fields)
    if not report.ok:
        print(f"gateway: ledger broken at seq {report.first_bad}: {report.reason}", file=sys.stderr)
        return 1
    return 0


def cmd_db_status(args: argparse.Namespace) -> int:
    from gateway.store import SCHEMA_VERSION, store_for

    store = store_for(load_config(args))
    version = store.schema_version()
    if version == SCHEMA_VERSION:
        state = "current"
    elif version < SCHEMA_VERSION:
        state = "behind: run 'gateway db upgrade'"
    else:
        state = "newer than this gateway: run a gateway as new as the one that upgraded it"
    fields = {"store": store.where, "schema_version": version, "gateway_schema_version": SCHEMA_VERSION, "state": state}
    emit(fields) if wants_json(args) else block(fields)
    return 0 if version == SCHEMA_VERSION else 1


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from gateway.store import store_for

    store = store_for(load_config(args))
    before, after = store.upgrade()
    if wants_json(args):
        emit({"store": store.where, "from": before, "to": after})
    elif before == after:
        print(f"the store {store.where} is at schema version {after} already")
    else:
        print(f"upgraded the store {store.where} from schema version {before} to {after}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Decided in this process (a running gateway serving this config answered already, if there is one:
    gateway/fast.py)."""
    import anyio

    from gateway.cli import configure_plain_logging
    from gateway.dry_run import dry_run
    from gateway.types import Principal

    configure_plain_logging()
    arguments = check_arguments(args.args)
    gateway = open_gateway(args)
    principal = Principal(agent=args.agent, role=args.role, task=args.task)

    async def run() -> dict[str, Any]:
        if gateway.catalog.get(args.tool) is None and gateway.catalog.upstream_of(args.tool) is not None:
            async with gateway.running():  # an upstream tool: its schema comes from the upstream
                return await dry_run(gateway, principal, args.tool, arguments, explain=args.explain)
        return await dry_run(gateway, principal, args.tool, arguments, explain=args.explain)

    return show_check(args, anyio.run(run))


def check_arguments(text: str) -> dict[str, Any]:
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise invalid(f"--args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise invalid("--args must be a JSON object")
    return arguments


def cmd_policy_test(args: argparse.Namespace) -> int:
    from gateway.identity.roles import RoleSet
    from gateway.policy.testing import run_policy_tests

    config = load_config(args)
    directory = Path(args.dir) if args.dir else config.policy_dir
    results = run_policy_tests(directory, {"roles": RoleSet.load(config.roles_dir).as_data()})
    for result in results:
        line = f"{result.status.upper():5} {result.package}.{result.name}"
        print(line + (f"  {result.message}" if result.message else ""))
    failed = [r for r in results if r.status != "pass"]
    print(f"{len(results) - len(failed)}/{len(results)} passed", file=sys.stderr)
    return 1 if failed else 0


def cmd_policy_lint(args: argparse.Namespace) -> int:
    from gateway.policy.lint import flat_layout, lint

    directory = Path(args.dir) if args.dir else load_config(args).policy_dir
    old_layout = flat_layout(directory)
    if old_layout:
        print(old_layout, file=sys.stderr)
    problems = lint(directory)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s) in {directory}", file=sys.stderr)
    return 1 if problems else 0


def cmd_policy_upgrade(args: argparse.Namespace) -> int:
    from gateway.bootstrap import upgrade_policies

    emit(upgrade_policies(load_config(args)))
    return 0


def cmd_policy_eval(args: argparse.Namespace) -> int:
    import anyio

    from gateway.identity.roles import RoleSet
    from gateway.policy.checked import CheckedSources
    from gateway.runtime import make_engine

    config = load_config(args)
    document = read_json(args.input, "the input document")
    roles = {"roles": RoleSet.load(config.roles_dir).as_data()}
    engine = make_engine(config.policy, roles, isolated=False, checked=CheckedSources(config.policy_checks_dir))
    decision = anyio.run(engine.decide, document)
    emit(decision.model_copy(update={"revision": engine.revision()}).model_dump())
    return 0


def cmd_approvals(args: argparse.Namespace) -> int:
    from gateway.approval_summary import command_of, reason_of
    from gateway.errors import ConfigError

    gateway = open_gateway(args)
    columns: list[Column] = [
        ("id", "ID"),
        ("created", "ASKED (UTC)", day_time),
        ("principal", "AGENT (ROLE)", lambda p: f"{p.get('agent')} ({p.get('role')})"),
        ("tool", "TOOL"),
        ("command", "COMMAND"),
        ("reason", "REASON"),
        ("channel", "CHANNEL", lambda c: c or "none: authorises nothing"),
        ("expires", "EXPIRES (UTC)", day_time),
    ]
    if args.approvals_command == "list":
        approvals = gateway.approvals.list(state=None if args.all else "pending")
        if wants_json(args):
            emit([{**a, "command": command_of(a), "reason": reason_of(a)} for a in approvals])
            return 0
        shown = [{**a, "command": command_of(a, 60), "reason": reason_of(a, 80)} for a in approvals]
        if args.all:
            columns.insert(1, ("state", "STATE"))
        table(shown, columns, empty="no pending approvals" + ("" if args.all else " (--all lists settled ones)"))
        return 0
    if args.approvals_command == "show":
        if len(args.ids) != 1:
            raise invalid("approvals show needs one approval id (gateway approvals list shows them)")
        approval = gateway.approvals.get(args.ids[0])
        emit(approval) if wants_json(args) else block(approval_fields(approval))
        return 0
    chosen = chosen_approvals(gateway, args)
    by = args.by or os.environ.get("USER") or "cli"
    approve = args.approvals_command == "approve"
    if len(chosen) > 1 or args.agent or args.tool:  # bulk: the calls shown, then a confirmation
        if not wants_json(args):
            table([{**a, "command": command_of(a, 60), "reason": reason_of(a, 80)} for a in chosen], columns)
        if not args.yes and not confirmed(f"{args.approvals_command} these {len(chosen)} calls? [y/N] "):
            raise invalid(f"nothing settled: confirm with y, or pass --yes to {args.approvals_command} without asking")
    if len(chosen) == 1 and not (args.agent or args.tool):
        one = gateway.approvals.settle(chosen[0]["id"], approve=approve, by=by, comment=args.comment)
        emit(one) if wants_json(args) else block(one)
        return 0
    settled, refused = [], []
    for approval in chosen:
        try:
            settled.append(gateway.approvals.settle(approval["id"], approve=approve, by=by, comment=args.comment))
        except ConfigError as exc:  # settled, used or expired since it was listed: the others still go
            refused.append({"id": approval["id"], "error": exc.message})
    outcome = {
        "settled": ", ".join(a["id"] for a in settled) or "-",
        "refused": "; ".join(f"{r['id']}: {r['error']}" for r in refused) or "-",
    }
    emit({"settled": settled, "refused": refused}) if wants_json(args) else block(outcome)
    return 0


def chosen_approvals(gateway: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The approvals an approve or deny names: its ids, or the pending ones of --agent and --tool."""
    if args.ids and (args.agent or args.tool):
        raise invalid("name approvals by id or select them with --agent/--tool, not both")
    if args.ids:
        return [gateway.approvals.get(approval_id) for approval_id in dict.fromkeys(args.ids)]
    if not (args.agent or args.tool):
        raise invalid(
            f"approvals {args.approvals_command} needs approval ids, or --agent/--tool to select pending ones"
        )
    chosen = [
        a
        for a in gateway.approvals.list(state="pending")
        if (not args.agent or a["principal"].get("agent") == args.agent) and (not args.tool or a["tool"] == args.tool)
    ]
    if not chosen:
        raise invalid("no pending approval matches --agent/--tool")
    return chosen


def confirmed(question: str) -> bool:
    """A y from a person at a terminal; no terminal, no confirmation."""
    if not sys.stdin.isatty():
        return False
    return input(question).strip().lower() in ("y", "yes")


def cmd_flow(args: argparse.Namespace) -> int:
    """``gateway flow show|lower``: sessions' labels; lowering them is a person's act, recorded."""
    gateway = open_gateway(args)
    if args.flow_command == "lower":
        by = args.by or os.environ.get("USER") or "cli"
        flow = gateway.labels.lower(args.session, by=by, reason=args.reason, label=args.label)
        emit(flow.as_input()) if wants_json(args) else block(flow_fields(flow.as_input()))
        return 0
    flows = [gateway.labels.read(args.session)] if args.session else gateway.labels.sessions()
    if wants_json(args):
        emit([f.as_input() for f in flows])
        return 0
    if not any(f.sources for f in flows):
        print("no labelled sessions" if not args.session else f"{args.session}: trusted, public (no labels)")
        return 0
    for flow in flows:
        block(flow_fields(flow.as_input()))
    return 0


def artifact_fields(shown: dict[str, Any]) -> dict[str, Any]:
    """One revision as ``gateway artifacts show`` prints it: who wrote it, with the session's flow labels then."""
    by = shown["provenance"]
    flow = by.get("flow")
    return {
        "key": shown["key"],
        "revision": shown.get("revision", "staged"),
        "digest": shown["digest"],
        "by": f"{by.get('agent')} ({by.get('role')})",
        "task": by.get("task") or "-",
        **({f"flow {k}": v for k, v in flow_fields(flow).items()} if flow else {"flow": "no labels recorded"}),
        "content": shown["content"],
    }


def flow_fields(flow: dict[str, Any]) -> dict[str, Any]:
    sources = [*flow["untrusted"], *flow["confidential"]]
    return {
        "session": flow["session"],
        "integrity": flow["integrity"],
        "confidentiality": flow["confidentiality"],
        **{f"{s['label']} ({s['tool']}, call {s['call_id'][:12]})": s["what"] for s in sources},
    }


def approval_fields(approval: dict[str, Any]) -> dict[str, Any]:
    """One approval as ``gateway approvals show`` prints it: the call, where it runs, and its state."""
    principal, decision = approval["principal"], approval["request"].get("decision") or {}
    return {
        "id": approval["id"],
        "state": approval["state"],
        "tool": approval["tool"],
        "agent": f"{principal.get('agent')} ({principal.get('role')})",
        "task": principal.get("task") or "-",
        "channel": approval["channel"] or "none recorded",
        "runs": approval["where"],
        "confinement": approval["confinement"],
        "reasons": "; ".join(decision.get("reasons") or []) or "-",
        "asked": day_time(approval["created"]),
        "expires": day_time(approval["expires"]),
        "settled by": approval.get("settled_by") or "-",
        "used by call": approval.get("used_by_call") or "-",
        "arguments digest": approval["arguments_digest"],
        "binding digest": approval["call_key"],
    }


def cmd_upstreams(args: argparse.Namespace) -> int:
    from gateway.ledger.chain import Ledger
    from gateway.store import open_store
    from gateway.tools.pins import Pins

    config = load_config(args)
    db = open_store(config)
    pins = Pins(db, Ledger.for_config(config, db), config.upstream_lockfile)
    pins.import_lock()  # the lockfile is authoritative: what it says is what is pinned
    command = args.upstreams_command
    if command == "pins":
        found = pins.list(args.upstream)
        if wants_json(args):
            emit(found)
            return 0
        columns: list[Column] = [
            ("upstream", "UPSTREAM"),
            ("kind", "KIND"),
            ("exposed", "NAME"),
            ("digest", "DIGEST", lambda d: d[:23]),
            ("source", "FROM"),
            ("pinned_by", "BY"),
            ("pinned_at", "AT (UTC)", day_time),
        ]
        table(found, columns, empty="nothing is pinned yet (an upstream is pinned when the gateway first lists it)")
        return 0
    if command == "diff":
        changes = pins.changes(args.upstream)
        if wants_json(args):
            emit(changes)
            return 0
        print_changes(changes)
        return 0
    if command == "approve":
        by = args.by or os.environ.get("USER") or "cli"
        approved = pins.approve(by, args.name, args.upstream, args.digest, every=args.all, comment=args.comment)
        locked = set(pins.read_lock())
        rewritten = sorted({a["upstream"] for a in approved} & locked)
        if rewritten:
            pins.write_lock(rewritten)
        if wants_json(args):
            emit({"approved": approved, "lockfile": str(pins.lockfile) if rewritten else None})
            return 0
        for item in approved:
            print(f"approved {clean(item['exposed'])} ({item['status']}) as {item['digest']}")
        if rewritten:
            print(f"{pins.lockfile} now pins it: commit it")
        return 0
    written = pins.write_lock(args.upstream)
    emit({"lockfile": str(written)}) if wants_json(args) else print(f"wrote {written}")
    return 0


def print_changes(changes: list[dict[str, Any]]) -> None:
    """Each held-back definition for a person: what it is, its digests, the diff, and the command to approve it."""
    if not changes:
        print("no definition is held back: every listed one is pinned")
    for change in changes:
        renamed = f" (renamed from {clean(change['renamed_from'])})" if change["renamed_from"] else ""
        print(f"{clean(change['exposed'])}  {change['status'].upper()}{renamed}  upstream {clean(change['upstream'])}")
        pinned, seen = change["pinned_digest"] or "-", day_time(change["last_seen"])
        print(f"  digest {change['digest']}  pinned {pinned}  seen {seen}")
        for line in change["diff"].splitlines():
            print(f"  {clean(line)}")
        print(f"  approve: gateway upstreams approve {clean(change['exposed'])} --digest {change['digest']}")


def day_time(iso: str | None) -> str:
    return "-" if not iso else iso[:19].replace("T", " ")


def cmd_trace(args: argparse.Namespace) -> int:
    from gateway.traces import Filters, Traces, render_trace, render_trace_list

    traces = Traces.for_config(load_config(args))
    if args.trace_command == "show":
        trace = traces.get(args.id)
        emit(trace.as_dict()) if args.json else render_trace(trace)
        return 0
    filters = Filters(
        args.role,
        args.agent,
        args.task,
        args.tier,
        args.rule,
        args.outcome,
        denied=args.denied,
        tool=args.tool,
        checks=args.checks,
    )
    found = traces.list(filters, limit=args.limit)
    noise = traces.noise(args.checks) if not filters.active() else (0, 0)
    if args.json:
        emit({"traces": [s.as_dict() for s in found], "unknown_tool_only": {"traces": noise[0], "calls": noise[1]}})
    else:
        render_trace_list(found, noise=noise)
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    result = gateway.checkpoints.rollback(args.checkpoint, dry_run=args.dry_run)
    emit(result) if wants_json(args) else block(rollback_lines(result))
    return 0


def rollback_lines(result: dict[str, Any]) -> dict[str, str]:
    """A rollback's (or a dry run's) plan, for a person: what is written, removed, moved and left."""
    would = "would " if result["dry_run"] else ""

    def listed(paths: list[str]) -> str:
        return f"{len(paths)}" + (": " + ", ".join(paths[:20]) + (" ..." if len(paths) > 20 else "") if paths else "")

    lines = {
        "checkpoint": f"{result['checkpoint']} ({result['kind']}, taken {day_time(result['taken'])})",
        "restores": str(result["restores"]),
        f"{would}write": listed(result["write"]),
        f"{would}remove": listed(result["remove"]),
        "unchanged": str(result["unchanged"]),
    }
    refs = result.get("refs")
    if refs is not None:
        moves = [f"{name} {clean(now, 12)} -> {clean(then, 12)}" for name, (now, then) in refs["move"].items()]
        moves += [f"delete {name}" for name in refs["delete"]]
        if refs["head"]:
            moves.append(f"HEAD {clean(refs['head'][0])} -> {clean(refs['head'][1])}")
        lines[f"{would}move refs"] = "; ".join(moves) or "none"
        lines["stashes"] = f"{refs['stashes']} restored" + (", and the index" if refs["index"] else "")
    for item in result["left"]:
        lines.setdefault("left alone", "")
        lines["left alone"] += f"{item['path']} ({item['why']}) "
    return lines


def cmd_task(args: argparse.Namespace) -> int:
    import anyio

    from gateway.errors import GatewayError
    from gateway.tasks.models import TaskManifest
    from gateway.tasks.tools import parse_artifact

    gateway = open_gateway(args)
    show = emit if wants_json(args) else block
    if args.task_command == "list":
        tasks = gateway.board.list()
        emit({"tasks": tasks}) if wants_json(args) else print_tasks(tasks)
        return 0
    if not args.target:
        raise invalid(
            f"task {args.task_command} needs {'a manifest FILE' if args.task_command == 'submit' else 'an ID'}"
        )
    by = os.environ.get("USER") or "cli"
    if args.task_command == "show":
        task = gateway.board.get(args.target)
        emit(task) if wants_json(args) else print_task(task)
        return 0
    if args.task_command in ("requeue", "abandon", "amend"):
        try:
            show(escalate(gateway, args, by))
        except GatewayError as refused:  # a person's refused escalation is recorded like a done one
            gateway.board.note(
                args.target,
                "escalation_refused",
                outcome=refused.outcome,
                asked=args.task_command,
                by=by,
                why=args.why,
                error=refused.as_dict(),
            )
            raise
        return 0
    manifest = parse_artifact(TaskManifest, read_manifest(args.target), "manifest")
    show(anyio.run(lambda: gateway.board.submit(manifest, by=by, trace_id=None)))
    return 0


def escalate(gateway: Gateway, args: argparse.Namespace, by: str) -> dict[str, Any]:
    """``gateway task requeue | abandon | amend``: what the board answers, or the error it refuses with."""
    import anyio

    from gateway.tasks.models import TaskManifest
    from gateway.tasks.tools import parse_artifact

    if args.task_command == "requeue":
        return gateway.board.requeue(args.target, by=by, why=args.why)
    if args.task_command == "abandon":
        return gateway.board.abandon(args.target, by=by, why=args.why)
    if not args.file:
        raise invalid("task amend needs the task ID and the new manifest FILE")
    manifest = parse_artifact(TaskManifest, read_manifest(args.file), "manifest")
    if manifest.task_id != args.target:
        raise invalid(f"the manifest in {args.file} is for task {manifest.task_id!r}, not {args.target!r}")
    return anyio.run(lambda: gateway.board.amend(manifest, by=by, why=args.why))


def print_tasks(tasks: list[dict[str, Any]]) -> None:
    columns: list[Column] = [
        ("task_id", "TASK"),
        ("state", "STATE"),
        ("ready", "READY", lambda ready: "yes" if ready else "no"),
        ("attempt", "ATTEMPT"),
        ("owner", "OWNER"),
        ("waiting_for", "WAITING FOR", lambda w: ", ".join(f"{k} ({v})" for k, v in w.items())),
        ("objective", "OBJECTIVE"),
    ]
    table(tasks, columns, empty="no tasks (gateway task submit FILE adds one)")


def print_task(task: dict[str, Any]) -> None:
    """One task for a person: its state and claim, its manifest's main fields, its attempts and blocker."""
    manifest = task["manifest"]
    block(
        {
            "task": task["id"],
            "state": task["state"] + (f" ({task['note']})" if task.get("note") else ""),
            "objective": manifest["objective"],
            "owner": task.get("owner"),
            "claim until": task.get("claim_expires"),
            "attempt": f"{task['attempt']} of {manifest['max_attempts']} ({task['failures']} failed)",
            "branch": f"{task['branch']} from {task['base_branch']} at {str(task['base_commit'])[:12]}",
            "worktree": task.get("worktree"),
            "allowed paths": ", ".join(manifest["allowed_paths"]),
            "verification": "; ".join(manifest["verification"]),
            "depends on": ", ".join(manifest["depends_on"]),
            "submitted by": task["submitted_by"],
            "trace": task["trace_id"],
        }
    )
    for attempt in task.get("history") or []:
        print(f"attempt  {clean(attempt)}")
    if task.get("blocker"):
        print("blocker report:")
        print(json.dumps(task["blocker"], indent=2, default=str))


def read_manifest(path: str) -> dict[str, Any]:
    """A manifest file, YAML or JSON (YAML is a superset of JSON). Times stay the text they were written as:
    an unquoted ``deadline: 2030-11-23T18:00:00Z`` is the string the manifest wants, not a datetime."""
    import yaml

    class TimesAsText(yaml.SafeLoader):
        yaml_implicit_resolvers = {
            first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }

    try:
        raw = yaml.load(Path(path).read_text(), Loader=TimesAsText)  # a SafeLoader
    except (OSError, yaml.YAMLError) as exc:
        raise invalid(f"cannot read the manifest {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise invalid(f"the manifest {path} must be a mapping of TaskManifest fields")
    return raw


def cmd_ceremony(args: argparse.Namespace) -> int:
    import anyio

    from gateway.types import Principal

    gateway = open_gateway(args)
    person = Principal(agent=f"person:{os.environ.get('USER') or 'cli'}", role="committer")

    async def run() -> Any:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            print(f"gateway: {message}", file=sys.stderr)

        async with gateway.running():
            return await gateway.ceremony.run(person, progress)

    report = anyio.run(run)
    emit(report)
    return 1 if report["left_out"] else 0


def cmd_deadletters(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    if args.deadletters_command == "list":
        letters = gateway.deadletters.list(state=None if args.all else "dead")
        if wants_json(args):
            emit({"deadletters": letters})
            return 0
        columns: list[Column] = [
            ("id", "ID"),
            ("time", "KEPT (UTC)", day_time),
            ("kind", "KIND"),
            ("tool", "TOOL"),
            ("task_id", "TASK"),
            ("principal", "AGENT", lambda p: (p or {}).get("agent")),
            ("state", "STATE"),
            ("error", "ERROR"),
        ]
        table(letters, columns, empty="no dead letters" + ("" if args.all else " waiting (--all lists replayed ones)"))
        return 0
    letter = gateway.deadletters.get(args.id)
    if args.deadletters_command == "show":
        emit(letter) if wants_json(args) else print_deadletter(letter)
        return 0
    return replay_deadletter(gateway, letter, args.payload)


def print_deadletter(letter: dict[str, Any]) -> None:
    """One dead letter for a person: who sent what, why it was refused, and the whole payload (ASCII JSON, so
    no character an agent sent can drive the terminal)."""
    from gateway.traces import clean

    principal = letter["principal"] or {}
    for label, value in (
        ("id", letter["id"]),
        ("state", letter["state"] + (f" at {letter['replayed_at']}" if letter["replayed_at"] else "")),
        ("kept", letter["time"]),
        ("kind", letter["kind"]),
        ("tool", letter["tool"]),
        ("task", letter["task_id"] or "-"),
        ("agent", f"{principal.get('agent')} ({principal.get('role')})"),
        ("trace", letter["trace_id"] or "-"),
        ("error", letter["error"]),
    ):
        print(f"{label:6} {clean(value)}")
    print("payload:")
    print(json.dumps(letter["payload"], indent=2))
    if letter["replay_result"] is not None:
        print("replay result:")
        print(json.dumps(letter["replay_result"], indent=2))


def replay_deadletter(gateway: Any, letter: dict[str, Any], payload_file: str | None) -> int:
    import anyio

    from gateway.tasks.deadletters import replay
    from gateway.traces import clean

    payload = None
    if payload_file is not None:
        payload = read_json(payload_file, "the payload")
        if not isinstance(payload, dict):
            raise invalid(f"the payload {payload_file} must be a JSON object: the tool call's arguments")
    by = os.environ.get("USER") or "cli"

    async def run() -> Any:
        gateway.load_pins()  # the replay sees the upstream tools a serving gateway sees, pinned as it pins them
        async with anyio.create_task_group() as tg:
            await gateway.pool.start(tg)
            try:
                return await replay(gateway, letter["id"], payload, by=by)
            finally:
                tg.cancel_scope.cancel()

    call = anyio.run(run)
    gateway.telemetry.flush()
    replayed = gateway.deadletters.get(letter["id"])
    if replayed["state"] == "replayed":
        emit({"deadletter_id": letter["id"], "state": "replayed", **replayed["replay_result"]})
        return 0 if call.outcome == "ok" else 1
    if call.error is not None:
        why = f"{call.error.code}: {call.error.message}"
    else:  # answered without running: a tier-3 call waits for a person
        why = f"{call.outcome}: " + " ".join(getattr(c, "text", "") for c in getattr(call.result, "content", []))
    print(f"gateway: replay of {letter['id']} did not go through; it stays dead. {clean(why, 2000)}", file=sys.stderr)
    return 1


def cmd_demo(args: argparse.Namespace) -> int:
    from gateway.demo import main as demo

    return demo(args.dir)


def cmd_sandbox_check(args: argparse.Namespace) -> int:
    """Each step of starting the sandbox, the first failure named with its fix (exit 1), as the container's
    entrypoint runs it before it serves."""
    from gateway.sandbox_probe import diagnose_config

    steps = diagnose_config(args.config)
    if wants_json(args):
        emit([{"step": s.name, "ok": s.ok, "detail": s.detail} for s in steps])
    else:
        for step in steps:
            print(step.line())
    if all(step.ok for step in steps):
        return 0
    print("gateway: the sandbox cannot start here, so no command would run (docs/container.md)", file=sys.stderr)
    return 1


def cmd_hook(args: argparse.Namespace) -> int:
    """Claude Code reads the answer as JSON on stdout and shows the reason; exit 0 even for "deny". Decided in
    this process (a running gateway serving this config answered already, if there is one: gateway/fast.py)."""
    from gateway.cli import configure_plain_logging
    from gateway.hook import decide_or_deny

    configure_plain_logging()
    emit(decide_or_deny(lambda: load_config(args), sys.stdin.read(), role=args.role, agent=args.agent))
    return 0
