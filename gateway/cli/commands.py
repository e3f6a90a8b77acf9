"""The commands of ``gateway`` (the parser is in ``gateway.cli.parser``).

Each imports what it needs when it runs: importing this module costs nothing, so a command pays only for
its own work. Errors are ``GatewayError``s, which ``gateway.cli.main`` prints as one line.

    cmd_check(build_parser().parse_args(["check", "--role", "worker", "--tool", "fs_read"]))
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli.output import block, clean, emit, table, wants_json

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
    print(
        "next: gateway token issue --role worker --agent w1, then gateway serve --http 127.0.0.1:8787",
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
    from gateway.config import parse_listen

    config = load_config(args)
    if args.stdio:
        return serve_stdio(config)
    host, port = parse_listen(args.http or config.listen)
    return serve_http(config, host, port, workers=args.workers or config.workers, log_level=args.log_level)


def serve_stdio(config: GatewayConfig) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    from gateway.runtime import Gateway
    from gateway.server import ScreenedReads, build_server

    gateway = Gateway(config)  # decides in worker processes, each decision bounded by the deadline
    token = os.environ.get("GATEWAY_TOKEN")
    principal = gateway.tokens.verify(token)  # checked at start: a bad token never serves a single call
    print(f"gateway: serving {principal.agent} ({principal.role}) over stdio", file=sys.stderr)
    server = build_server(gateway, token=token)

    async def run() -> None:
        async with gateway.running(), stdio_server() as (read, write):
            screened = ScreenedReads(read, write, gateway, token)  # a line that is not valid Unicode: answered
            await server.run(screened, write, server.create_initialization_options())

    anyio.run(run)
    return 0


def serve_http(config: GatewayConfig, host: str, port: int, workers: int = 1, log_level: str = "info") -> int:
    """One process, or ``workers`` processes on one socket (uvicorn's supervisor binds it once, starts a
    process per worker, replaces one that dies and stops them all on SIGTERM or SIGINT). Each worker process
    builds its own Gateway (gateway.server.worker_app); they share the store, the state dir and the workspace.
    uvloop and httptools serve when installed (the ``fast`` extra)."""
    import uvicorn

    from gateway.runtime import Gateway
    from gateway.server import WORKER_ENV, http_app

    gateway = Gateway(config)  # a config, roles or policy that does not load stops here, before any worker
    url = f"http://{host}:{port}/mcp"
    options: dict[str, Any] = {"host": host, "port": port, "log_level": "warning", "access_log": False}
    if workers <= 1:
        print(f"gateway: serving {url}", file=sys.stderr)
        uvicorn.run(http_app(gateway, host=host), **options)
        return 0
    gateway.db.close()  # the workers open their own; this one only proved that everything loads
    assert config.source is not None
    os.environ[WORKER_ENV] = json.dumps({"config": str(config.source), "host": host, "log_level": log_level})
    print(f"gateway: serving {url} with {workers} worker processes (supervisor pid {os.getpid()})", file=sys.stderr)
    from uvicorn.supervisors import Multiprocess

    settings = uvicorn.Config("gateway.server:worker_app", factory=True, workers=workers, **options)
    bound = settings.bind_socket()  # once, here; every worker accepts on it
    # the supervisor says when a worker died and was replaced, and when it stops them; workers stay quiet
    logging.getLogger("uvicorn.error").setLevel(logging.INFO)
    Multiprocess(settings, sockets=[bound]).run()
    return 0


def cmd_token_issue(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    gateway.roles.require(args.role)
    token, claims = gateway.tokens.issue(role=args.role, agent=args.agent, task=args.task, ttl_s=args.ttl)
    gateway.ledger.append(
        {
            "kind": "token",
            "outcome": "ok",
            "principal": {"agent": args.agent, "role": args.role, "task": args.task},
            "detail": {"action": "issue", "jti": claims["jti"], "exp": claims["exp"]},
        }
    )
    if args.json:
        emit({"token": token, "claims": claims})
        return 0
    print(token)  # alone on stdout, so $(gateway token issue ...) is the token
    if sys.stderr.isatty():
        from datetime import UTC, datetime

        expires = datetime.fromtimestamp(claims["exp"], UTC).isoformat(timespec="seconds")
        print(f"{args.agent} as {args.role}, jti {claims['jti']}, expires {expires}", file=sys.stderr)
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    fresh = gateway.revocations.revoke(args.jti, reason=args.reason)
    gateway.ledger.append({"kind": "token", "outcome": "ok", "detail": {"action": "revoke", "jti": args.jti}})
    print(f"revoked {args.jti}" if fresh else f"{args.jti} was already revoked", file=sys.stderr)
    return 0


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
    from gateway.ledger.store import SCHEMA_VERSION, store_for

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
    from gateway.ledger.store import store_for

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
    import anyio

    from gateway.cli import EXIT_ASK, EXIT_DENY
    from gateway.types import Principal

    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise invalid(f"--args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise invalid("--args must be a JSON object")
    gateway = open_gateway(args)
    gateway.roles.require(args.role)
    principal = Principal(agent=args.agent, role=args.role, task=args.task)

    async def run() -> dict[str, Any]:
        if gateway.catalog.get(args.tool) is None and gateway.catalog.upstream_of(args.tool) is not None:
            async with gateway.running():  # an upstream tool: its schema comes from the upstream
                return await gateway.check(principal, args.tool, arguments, explain=args.explain)
        return await gateway.check(principal, args.tool, arguments, explain=args.explain)

    report = anyio.run(run)
    if report["rules"] == ["gateway.unknown_tool"] and gateway.catalog.get(args.tool) is None:
        raise unknown_tool(args.tool, [spec.name for spec in gateway.catalog.all()])  # recorded, and said plainly
    emit(report) if wants_json(args) else print_decision(report, principal, args.tool)
    return {"allow": 0, "ask": EXIT_ASK}.get(report["action"], EXIT_DENY)


def unknown_tool(name: str, known: list[str]) -> Exception:
    import difflib

    from gateway.errors import UnknownTool

    close = difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known)[:12])}, ..."
    return UnknownTool(f"unknown tool {name[:64]!r} ({hint})")


def print_decision(report: dict[str, Any], principal: Any, tool: str) -> None:
    """The decision for a person: what, why, on which facts; with --explain the input and every rule fired."""
    action = {"allow": "ALLOW", "ask": "ASK (a person approves)", "deny": "DENY"}.get(report["action"], "DENY")
    print(f"{action}  tier {report['tier']}  {clean(tool)} as {clean(principal.agent)} ({clean(principal.role)})")
    print(f"rules    {clean(', '.join(report['rules']))}")
    for i, reason in enumerate(report["reasons"]):
        print(f"{'reasons' if i == 0 else '':8} {clean(reason)}")
    effects = {k: v for k, v in (report.get("effects") or {}).items() if v and k != "commands"}
    for command in (report.get("effects") or {}).get("commands") or []:
        print(f"command  {clean(' '.join(command['argv']))}")
    for key, value in effects.items():
        print(f"{key:8} {clean(value)}")
    if "fired" in report:
        print("rules fired:")
        if report["fired"] is None:
            print("  (this policy bundle has no data.gateway.fired: copy policies/decision.rego from this version)")
        for fired in report["fired"] or []:
            print(f"  {fired['effect']:7} {clean(fired['rule']):28} {clean(fired['reason'])}")
        print("input document:")
        print(json.dumps(report["input"], indent=2, default=str))


def cmd_policy_test(args: argparse.Namespace) -> int:
    from gateway.identity.roles import RoleSet
    from gateway.policy.testing import run_policy_tests

    config = load_config(args)
    directory = Path(args.dir) if args.dir else config.policy.path
    results = run_policy_tests(directory, {"roles": RoleSet.load(config.roles).as_data()})
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
    emit(anyio.run(engine.decide, document).model_dump())
    return 0


def cmd_approvals(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    if args.approvals_command == "list":
        approvals = gateway.approvals.list(state=None if args.all else "pending")
        if wants_json(args):
            emit(approvals)
            return 0
        columns = [
            ("id", "ID"),
            ("state", "STATE"),
            ("created", "ASKED (UTC)", day_time),
            ("expires", "EXPIRES (UTC)", day_time),
            ("principal", "AGENT (ROLE)", lambda p: f"{p.get('agent')} ({p.get('role')})"),
            ("tool", "TOOL"),
            ("channel", "CHANNEL", lambda c: c or "none: authorises nothing"),
            ("arguments_digest", "ARGUMENTS DIGEST", lambda d: d[:16]),
        ]
        table(approvals, columns, empty="no pending approvals" + ("" if args.all else " (--all lists settled ones)"))
        return 0
    if not args.id:
        raise invalid(f"approvals {args.approvals_command} needs an approval id (gateway approvals list shows them)")
    if args.approvals_command == "show":
        approval = gateway.approvals.get(args.id)
        emit(approval) if wants_json(args) else block(approval_fields(approval))
        return 0
    by = args.by or os.environ.get("USER") or "cli"
    approve = args.approvals_command == "approve"
    settled = gateway.approvals.settle(args.id, approve=approve, by=by, comment=args.comment)
    emit(settled) if wants_json(args) else block(settled)
    return 0


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
    from gateway.ledger.store import open_store
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
        columns = [
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
        args.role, args.agent, args.task, args.tier, args.rule, args.outcome, denied=args.denied, tool=args.tool
    )
    found = traces.list(filters, limit=args.limit)
    emit({"traces": [s.as_dict() for s in found]}) if args.json else render_trace_list(found)
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
    columns = [
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
        columns = [
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


def cmd_hook(args: argparse.Namespace) -> int:
    from gateway.hook import decide_or_deny

    # Claude Code reads the answer as JSON on stdout and shows the reason; exit 0 even for "deny".
    emit(decide_or_deny(lambda: load_config(args), sys.stdin.read(), role=args.role, agent=args.agent))
    return 0
