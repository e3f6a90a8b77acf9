"""The ``gateway`` command (ARCHITECTURE.md section 3).

Every command reads ./gateway.yaml unless --config names another. Errors print one line to stderr
and exit non-zero; JSON goes to stdout only.

    gateway init repo
    gateway token issue --role worker --agent w1 --task T1 --ttl 8h
    GATEWAY_TOKEN=... gateway serve --stdio
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.config import CONFIG_FILE, GatewayConfig, parse_listen
from gateway.errors import GatewayError, InvalidRequest
from gateway.types import FILTER_OUTCOMES

Handler = Callable[[argparse.Namespace], int]


def parse_ttl(text: str) -> int:
    match = re.fullmatch(r"(\d+)([smhd]?)", text.strip())
    if not match or int(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"ttl {text!r} must look like 90s, 30m, 8h or 2d")
    return int(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def emit(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def load_config(args: argparse.Namespace) -> GatewayConfig:
    return GatewayConfig.load(args.config)


def open_gateway(args: argparse.Namespace) -> Any:
    from gateway.runtime import Gateway

    # a single command decides at most once: in this process (serve decides in worker processes)
    return Gateway(load_config(args), isolated=False)


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
    print(f"moved the state dir {moved['from']} to {moved['state_dir']}", file=sys.stderr)
    print(f"worktrees  {moved['worktrees_dir']} ({len(moved['worktrees'])} moved)", file=sys.stderr)
    emit(moved)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from gateway.telemetry import configure_logging

    configure_logging(args.log_level)
    config = load_config(args)
    if args.stdio:
        return serve_stdio(config)
    host, port = parse_listen(args.http or config.listen)
    return serve_http(config, host, port)


def serve_stdio(config: GatewayConfig) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    from gateway.runtime import Gateway
    from gateway.server import build_server

    gateway = Gateway(config)  # decides in worker processes, each decision bounded by the deadline
    token = os.environ.get("GATEWAY_TOKEN")
    principal = gateway.tokens.verify(token)  # checked at start: a bad token never serves a single call
    print(f"gateway: serving {principal.agent} ({principal.role}) over stdio", file=sys.stderr)
    server = build_server(gateway, token=token)

    async def run() -> None:
        async with gateway.running(), stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
    return 0


def serve_http(config: GatewayConfig, host: str, port: int) -> int:
    import uvicorn

    from gateway.runtime import Gateway
    from gateway.server import http_app

    app = http_app(Gateway(config), host=host)
    print(f"gateway: serving http://{host}:{port}/mcp", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    return 0


def cmd_token_issue(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
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
    else:
        print(token)
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
        ring.remove(args.kid)
        print(f"removed {args.kid}; tokens signed with it no longer verify", file=sys.stderr)
    else:
        emit({"active": ring.active_kid(), "kids": ring.kids()})
    return 0


def cmd_ledger_verify(args: argparse.Namespace) -> int:
    from gateway.ledger.chain import Ledger

    report = Ledger.for_config(load_config(args)).verify()
    emit(
        {
            "ok": report.ok,
            "checked": report.checked,
            "first_bad": report.first_bad,
            "reason": report.reason,
            "authenticated": report.authenticated,
            "legacy_unauthenticated_rows": report.legacy,
        }
    )
    if not report.ok:
        print(f"gateway: ledger broken at seq {report.first_bad}: {report.reason}", file=sys.stderr)
        return 1
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import anyio

    from gateway.types import Principal

    gateway = open_gateway(args)
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"--args is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise InvalidRequest("--args must be a JSON object")
    principal = Principal(agent=args.agent, role=args.role, task=args.task)

    async def run() -> dict[str, Any]:
        if gateway.catalog.get(args.tool) is None and gateway.pool.owner(args.tool) is not None:
            async with gateway.running():  # an upstream tool: its schema comes from the upstream
                return await gateway.check(principal, args.tool, arguments)
        return await gateway.check(principal, args.tool, arguments)

    emit(anyio.run(run))
    return 0


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


def cmd_policy_eval(args: argparse.Namespace) -> int:
    import anyio

    from gateway.identity.roles import RoleSet
    from gateway.runtime import make_engine

    config = load_config(args)
    try:
        document = json.loads(Path(args.input).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"cannot read the input document {args.input}: {exc}") from None
    engine = make_engine(config.policy, {"roles": RoleSet.load(config.roles_dir).as_data()}, isolated=False)
    emit(anyio.run(engine.decide, document).model_dump())
    return 0


def cmd_approvals(args: argparse.Namespace) -> int:
    gateway = open_gateway(args)
    if args.approvals_command == "list":
        emit(gateway.approvals.list(state=None if args.all else "pending"))
        return 0
    if not args.id:
        raise InvalidRequest(f"approvals {args.approvals_command} needs an approval id")
    by = args.by or os.environ.get("USER") or "cli"
    emit(gateway.approvals.settle(args.id, approve=args.approvals_command == "approve", by=by))
    return 0


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
    result = gateway.checkpoints.rollback(args.checkpoint)
    gateway.ledger.append(
        {
            "kind": "rollback",
            "outcome": "ok",
            "detail": {"checkpoint": args.checkpoint, "removed": result.get("removed", [])},
        }
    )
    emit(result)
    return 0


def cmd_task(args: argparse.Namespace) -> int:
    import anyio

    from gateway.tasks.models import TaskManifest
    from gateway.tasks.tools import parse_artifact

    gateway = open_gateway(args)
    if args.task_command == "list":
        emit({"tasks": gateway.board.list()})
        return 0
    if not args.target:
        raise InvalidRequest(
            f"task {args.task_command} needs {'a manifest FILE' if args.task_command == 'submit' else 'an ID'}"
        )
    by = os.environ.get("USER") or "cli"
    if args.task_command == "show":
        emit(gateway.board.get(args.target))
        return 0
    if args.task_command == "requeue":
        emit(gateway.board.requeue(args.target, by=by, why=args.why))
        return 0
    if args.task_command == "abandon":
        emit(gateway.board.abandon(args.target, by=by, why=args.why))
        return 0
    if args.task_command == "amend":
        if not args.file:
            raise InvalidRequest("task amend needs the task ID and the new manifest FILE")
        manifest = parse_artifact(TaskManifest, read_manifest(args.file), "manifest")
        if manifest.task_id != args.target:
            raise InvalidRequest(f"the manifest in {args.file} is for task {manifest.task_id!r}, not {args.target!r}")
        emit(anyio.run(lambda: gateway.board.amend(manifest, by=by, why=args.why)))
        return 0
    manifest = parse_artifact(TaskManifest, read_manifest(args.target), "manifest")
    emit(anyio.run(lambda: gateway.board.submit(manifest, by=by, trace_id=None)))
    return 0


def read_manifest(path: str) -> dict[str, Any]:
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text())  # YAML is a superset of JSON: either works
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidRequest(f"cannot read the manifest {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise InvalidRequest(f"the manifest {path} must be a mapping of TaskManifest fields")
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
    from gateway.traces import clean, day_time

    gateway = open_gateway(args)
    if args.deadletters_command == "list":
        letters = gateway.deadletters.list(state=None if args.all else "dead")
        if args.json:
            emit({"deadletters": letters})
            return 0
        if not letters:
            print("no dead letters" if args.all else "no dead letters waiting (--all lists replayed ones too)")
        for d in letters:
            agent, task = clean((d["principal"] or {}).get("agent"), 24), clean(d["task_id"] or "-", 16)
            line = f"{d['id']:15}  {day_time(d['time']):19}  {d['kind']:12}  {d['tool']:14}  {task:16}  {agent:24}"
            print(f"{line}  {d['state']:8}  {clean(d['error'], 160)}")
        return 0
    letter = gateway.deadletters.get(args.id)
    if args.deadletters_command == "show":
        emit(letter) if args.json else print_deadletter(letter)
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
        try:
            payload = json.loads(Path(payload_file).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InvalidRequest(f"cannot read the payload {payload_file}: {exc}") from None
        if not isinstance(payload, dict):
            raise InvalidRequest(f"the payload {payload_file} must be a JSON object: the tool call's arguments")
    by = os.environ.get("USER") or "cli"

    async def run() -> Any:
        async with anyio.create_task_group() as tg:
            await gateway.pool.start(tg)  # the replay sees the upstream tools a serving gateway sees
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


# --- parser ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description="A policy-enforcing MCP tool gateway")
    parser.add_argument("--config", default=CONFIG_FILE, help="gateway.yaml to use (default: ./gateway.yaml)")
    commands = parser.add_subparsers(dest="command", required=True)

    init = commands.add_parser("init", help="make DIR a gateway workspace")
    init.add_argument("dir", nargs="?", default=".")
    init.add_argument("--force", action="store_true", help="overwrite an existing gateway.yaml")
    init.add_argument(
        "--state-dir",
        help="where the gateway keeps its keys, store, roles and policies; outside DIR "
        "(default: $XDG_STATE_HOME/mcp-gateway/<name>-<hash>/state)",
    )
    init.set_defaults(handler=cmd_init)

    migrate = commands.add_parser(
        "migrate", help="move a state dir that lies inside the workspace (an older layout) out of agents' reach"
    )
    migrate.add_argument("--state-dir", help="where to move it (default: $XDG_STATE_HOME/mcp-gateway/...)")
    migrate.set_defaults(handler=cmd_migrate)

    serve = commands.add_parser("serve", help="serve MCP over stdio or streamable HTTP")
    mode = serve.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout (token: GATEWAY_TOKEN)")
    mode.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(handler=cmd_serve)

    token = commands.add_parser("token", help="issue and revoke credentials").add_subparsers(
        dest="token_command", required=True
    )
    issue = token.add_parser("issue", help="print a signed credential (JWT)")
    issue.add_argument("--role", required=True)
    issue.add_argument("--agent", required=True)
    issue.add_argument("--task")
    issue.add_argument("--ttl", type=parse_ttl, default=parse_ttl("8h"))
    issue.add_argument("--json", action="store_true", help="print the token and its claims as JSON")
    issue.set_defaults(handler=cmd_token_issue)
    revoke = token.add_parser("revoke", help="revoke a credential by its jti")
    revoke.add_argument("jti")
    revoke.add_argument("--reason")
    revoke.set_defaults(handler=cmd_token_revoke)

    keys = commands.add_parser("keys", help="signing keys: list, rotate, remove")
    keys.add_argument("keys_command", choices=["list", "rotate", "remove"])
    keys.add_argument("kid", nargs="?")
    keys.set_defaults(handler=cmd_keys)

    ledger = commands.add_parser("ledger", help="the hash-chained ledger").add_subparsers(
        dest="ledger_command", required=True
    )
    ledger.add_parser("verify", help="recompute the chain; name the first bad record").set_defaults(
        handler=cmd_ledger_verify
    )
    check = commands.add_parser("check", help="print the decision for one call without running it")
    check.add_argument("--role", required=True)
    check.add_argument("--agent", default="cli")
    check.add_argument("--task")
    check.add_argument("--tool", required=True)
    check.add_argument("--args", default="{}", help="the call's arguments as a JSON object")
    check.set_defaults(handler=cmd_check)

    policy = commands.add_parser("policy", help="test and evaluate the Rego policy").add_subparsers(
        dest="policy_command", required=True
    )
    policy_test = policy.add_parser("test", help="run the Rego unit tests (test_* rules)")
    policy_test.add_argument("dir", nargs="?", help="policy directory (default: the configured one)")
    policy_test.set_defaults(handler=cmd_policy_test)
    policy_eval = policy.add_parser("eval", help="the raw decision for one input document")
    policy_eval.add_argument("--input", required=True, help="a JSON file holding the input document")
    policy_eval.set_defaults(handler=cmd_policy_eval)

    approvals = commands.add_parser("approvals", help="tier-3 approvals: list, approve ID, deny ID")
    approvals.add_argument("approvals_command", choices=["list", "approve", "deny"])
    approvals.add_argument("id", nargs="?")
    approvals.add_argument("--all", action="store_true", help="list settled and used approvals too")
    approvals.add_argument("--by", help="who settles it (default: $USER)")
    approvals.set_defaults(handler=cmd_approvals)

    trace = commands.add_parser("trace", help="traces from the ledger: list, show ID").add_subparsers(
        dest="trace_command", required=True
    )
    trace_list = trace.add_parser("list", help="one line per trace: refused first, then asked, then the rest")
    trace_list.add_argument("--denied", action="store_true", help="only traces with a refused call")
    trace_list.add_argument("--role")
    trace_list.add_argument("--agent")
    trace_list.add_argument("--task")
    trace_list.add_argument("--tier", type=int, choices=[1, 2, 3])
    trace_list.add_argument("--rule", help="a rule, or a rule prefix such as 'paths'")
    trace_list.add_argument("--tool", help="only traces with a call of this tool")
    trace_list.add_argument(
        "--outcome", choices=FILTER_OUTCOMES, help="allowed and approved: what was decided; the rest: how calls ended"
    )
    trace_list.add_argument("--limit", type=int, help="at most this many traces")
    trace_list.add_argument("--json", action="store_true", help="print the traces as JSON")
    trace_list.set_defaults(handler=cmd_trace)
    trace_show = trace.add_parser("show", help="one trace as a tree: calls, decisions, task and intent steps")
    trace_show.add_argument("id", help="a trace id, a unique prefix of one, or a task id")
    trace_show.add_argument("--json", action="store_true", help="print the trace as JSON")
    trace_show.set_defaults(handler=cmd_trace)

    deadletters = commands.add_parser(
        "deadletters", help="handoffs refused as malformed, kept whole: list, show ID, replay ID"
    ).add_subparsers(dest="deadletters_command", required=True)
    dl_list = deadletters.add_parser("list", help="one line per dead letter waiting for a replay, newest first")
    dl_list.add_argument("--all", action="store_true", help="list replayed dead letters too")
    dl_list.add_argument("--json", action="store_true", help="print the dead letters as JSON (without payloads)")
    dl_list.set_defaults(handler=cmd_deadletters)
    dl_show = deadletters.add_parser("show", help="one dead letter with its whole payload")
    dl_show.add_argument("id", help="a dead letter id (DL-...)")
    dl_show.add_argument("--json", action="store_true", help="print the dead letter as JSON")
    dl_show.set_defaults(handler=cmd_deadletters)
    dl_replay = deadletters.add_parser(
        "replay",
        help="run the same tool call again through the gateway's pipeline, as the agent that sent it; exit 1 "
        "if it does not go through (a payload still malformed is kept as a new dead letter)",
    )
    dl_replay.add_argument("id", help="a dead letter id (DL-...)")
    dl_replay.add_argument(
        "--payload",
        metavar="FILE",
        help="a JSON file with the corrected arguments of the call (default: the stored payload)",
    )
    dl_replay.set_defaults(handler=cmd_deadletters)

    rollback = commands.add_parser("rollback", help="restore the workspace to a tier-2 checkpoint")
    rollback.add_argument("checkpoint")
    rollback.set_defaults(handler=cmd_rollback)

    hook = commands.add_parser("hook", help="answer an agent's own tool hook with the gateway's policy")
    hook.add_argument("client", choices=["claude-code"])
    hook.add_argument("--role", default="worker", help="role to decide as when GATEWAY_TOKEN is not set")
    hook.add_argument("--agent", default="claude-code")
    hook.set_defaults(handler=cmd_hook)

    demo = commands.add_parser("demo", help="the four-role workflow against a scratch repository, end to end")
    demo.add_argument("--dir", help="where to make the scratch repository (default: a new temporary directory)")
    demo.set_defaults(handler=cmd_demo)

    task = commands.add_parser("task", help="tasks: submit FILE, list, show ID, requeue ID, amend ID FILE, abandon ID")
    task.add_argument(
        "task_command",
        choices=["submit", "list", "show", "requeue", "amend", "abandon"],
        help="submit a manifest; list tasks; show one (its attempts and blocker report); requeue a blocked or "
        "quarantined task with a fresh budget; amend its manifest (a new version); abandon it (its dependents "
        "are blocked)",
    )
    task.add_argument("target", nargs="?", metavar="FILE|ID", help="the manifest FILE (submit) or the task ID")
    task.add_argument("file", nargs="?", metavar="FILE", help="amend: the new manifest (YAML or JSON)")
    task.add_argument("--why", default="", help="requeue, amend, abandon: why (recorded in the task's trace)")
    task.set_defaults(handler=cmd_task)

    ceremony = commands.add_parser(
        "ceremony",
        help="the merge ceremony: triage every task, merge the verified ones with approved intents in dependency "
        "order, leave out failures and block their dependents; exit 1 when one was left out",
    )
    ceremony.set_defaults(handler=cmd_ceremony)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "serve":  # serve sets its own level; stdout carries JSON (or MCP), logs go to stderr
        from gateway.telemetry import configure_logging

        configure_logging("warning")
    try:
        return int(args.handler(args))
    except GatewayError as exc:
        print(f"gateway: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
