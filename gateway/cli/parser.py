"""The argument parser: every command and option with its help text, and an example for each command.

argparse rather than Click or Typer: it costs nothing at start-up, and start-up is what the hook pays.

    args = build_parser().parse_args(["check", "--role", "worker", "--tool", "fs_read"])
    args.handler(args)
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from gateway.cli import commands
from gateway.cli.options import CONFIG_FILE, check_options, hook_options, json_option
from gateway.listen import parse_listen

# gateway.types.FILTER_OUTCOMES, not imported so that `gateway --help` loads no pydantic (tests/test_cli.py)
OUTCOMES = ("allowed", "denied", "asked", "approved", "error", "invalid", "ok", "started", "cancelled", "interrupted")


def parse_ttl(text: str) -> int:
    match = re.fullmatch(r"(\d+)([smhd]?)", text.strip())
    if not match or int(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"ttl {text!r} must look like 90s, 30m, 8h or 2d")
    return int(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def positive_int(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number from 1 to 64")
    return int(text)


def listen_address(text: str) -> str:
    """``--http``: HOST:PORT or a bare PORT (on 127.0.0.1); anything else is a usage error, not a traceback."""
    try:
        parse_listen(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


class Commands:
    """A group of subcommands; each gets its help line, a description and its examples."""

    def __init__(self, parent: argparse.ArgumentParser, dest: str) -> None:
        self.group = parent.add_subparsers(dest=dest, required=True, metavar="COMMAND")

    def add(self, name: str, help: str, examples: list[str], **kwargs: Any) -> argparse.ArgumentParser:
        epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
        return self.group.add_parser(
            name, help=help, description=help, epilog=epilog, formatter_class=Formatter, **kwargs
        )


class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Examples keep their lines; defaults are shown after each option's help."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gateway",
        description="A policy-enforcing MCP tool gateway. Output is for people on a terminal and JSON otherwise "
        "(or with --json); errors are one line on stderr.",
        epilog="exit codes (each means one thing in every command; docs/cli.md lists them per command): 0 done "
        "(check: allow), 1 done and the answer is no (ledger broken, a policy test failed, ...), 2 error (usage, "
        "bad input, unknown role/tool/id, unreadable file, an address serve cannot listen on), 3 check: ask, "
        "4 check: deny, 70 a bug in the gateway (traceback printed), 130 interrupted, 141 stdout closed early."
        "\nexample:\n  gateway --config ~/repo/gateway.yaml check "
        '--role worker --tool fs_read --args \'{"path": "README.md"}\'',
        formatter_class=Formatter,
    )
    parser.add_argument(
        "--config",
        default=CONFIG_FILE,
        help="the gateway.yaml to use; every relative path in it is relative to the file's own directory",
    )
    top = Commands(parser, "command")

    init = top.add(
        "init",
        "make DIR a gateway workspace: gateway.yaml, and a state dir outside it with a signing key, roles and policies",
        ["gateway init .", "gateway init ~/src/app --state-dir ~/.local/state/app-gateway"],
    )
    init.add_argument("dir", nargs="?", default=".", help="the workspace: the directory agents work in")
    init.add_argument("--force", action="store_true", help="overwrite an existing gateway.yaml")
    init.add_argument(
        "--state-dir",
        help="where the gateway keeps its keys, store, roles and policies; outside DIR "
        "(default: $XDG_STATE_HOME/mcp-gateway/<name>-<hash>/state)",
    )
    init.set_defaults(handler=commands.cmd_init)

    migrate = top.add(
        "migrate",
        "move a state dir that lies inside the workspace (an older layout) out of agents' reach",
        ["gateway migrate", "gateway migrate --state-dir /var/lib/gateway/app"],
    )
    migrate.add_argument("--state-dir", help="where to move it (default: $XDG_STATE_HOME/mcp-gateway/...)")
    json_option(migrate, "what was moved")
    migrate.set_defaults(handler=commands.cmd_migrate)

    serve = top.add(
        "serve",
        "serve MCP over stdio or streamable HTTP (HTTP also serves /ui and /healthz)",
        [
            "gateway serve --http 127.0.0.1:8787",
            "gateway serve --http 8787                  # the same: a bare port is 127.0.0.1",
            "gateway serve --http 0.0.0.0:8787 --workers 2",
            "GATEWAY_TOKEN=$(gateway token issue --role worker --agent w1) gateway serve --stdio",
        ],
    )
    mode = serve.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout (token: GATEWAY_TOKEN)")
    mode.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=listen_address,
        help="serve streamable HTTP at http://HOST:PORT/mcp; a bare PORT listens on 127.0.0.1 (default: listen "
        "in config)",
    )
    serve.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="HTTP: N gateway processes on one address, sharing the store (default: workers in config, 1)",
    )
    serve.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"], help="log level (stderr)"
    )
    serve.set_defaults(handler=commands.cmd_serve)

    token = Commands(
        top.add(
            "token", "issue and revoke credentials", ["gateway token issue --role worker --agent w1 --task T1 --ttl 8h"]
        ),
        "token_command",
    )
    issue = token.add(
        "issue",
        "print a signed credential (JWT) for one agent in one role",
        [
            "gateway token issue --role worker --agent w1 --task T1 --ttl 8h",
            "gateway token issue --role admin --agent alice --json",
        ],
    )
    issue.add_argument("--role", required=True, help="a role file's name (see the state dir's roles/)")
    issue.add_argument("--agent", required=True, help="the agent's name, recorded with every call it makes")
    issue.add_argument("--task", help="bind the credential to one task id")
    issue.add_argument("--ttl", type=parse_ttl, default="8h", help="lifetime: 90s, 30m, 8h or 2d")
    json_option(issue, "the token and its claims")
    issue.set_defaults(handler=commands.cmd_token_issue)
    revoke = token.add(
        "revoke",
        "revoke a credential by its jti; a jti this gateway never issued is an error (exit 2), nothing revoked",
        ["gateway token revoke 3f2a... --reason lost", "gateway token revoke 9b1c... --external --reason offboarded"],
    )
    revoke.add_argument("jti", help="the token's jti claim (token issue --json prints it)")
    revoke.add_argument("--reason", help="why, recorded with the revocation")
    revoke.add_argument(
        "--external",
        action="store_true",
        help="the jti of a token from identity.external_issuer (not issued here, so not in the ledger)",
    )
    revoke.set_defaults(handler=commands.cmd_token_revoke)

    flow = Commands(
        top.add(
            "flow",
            "information-flow labels of sessions (docs/flow.md): show them; a person lowers them",
            ["gateway flow show", "gateway flow lower task:T1 --reason 'the fetched page was our own docs'"],
        ),
        "flow_command",
    )
    flow_show = flow.add(
        "show", "every labelled session, or one, with what raised its labels", ["gateway flow show task:T1 --json"]
    )
    flow_show.add_argument("session", nargs="?", help="task:ID, token:JTI or agent:ROLE/AGENT (default: all)")
    json_option(flow_show, "the sessions and their sources")
    flow_show.set_defaults(handler=commands.cmd_flow)
    flow_lower = flow.add(
        "lower",
        "lower a session's labels (both, or one with --label), recorded in the ledger",
        ["gateway flow lower task:T1 --label untrusted --reason 'reviewed the fetched page'"],
    )
    flow_lower.add_argument("session", help="task:ID, token:JTI or agent:ROLE/AGENT (gateway flow show lists them)")
    flow_lower.add_argument("--label", choices=["untrusted", "confidential"], help="only this label")
    flow_lower.add_argument("--reason", required=True, help="why, recorded in the ledger")
    flow_lower.add_argument("--by", help="who lowers them (default: $USER)")
    json_option(flow_lower, "the session's labels after")
    flow_lower.set_defaults(handler=commands.cmd_flow)

    keys = top.add(
        "keys",
        "signing keys: list them, rotate (a new signing key), remove KID (its tokens stop verifying)",
        ["gateway keys list", "gateway keys rotate", "gateway keys remove 20261123101500-ab12cd34"],
    )
    keys.add_argument("keys_command", choices=["list", "rotate", "remove"], help="what to do")
    keys.add_argument("kid", nargs="?", help="remove: the key id")
    json_option(keys, "the key list")
    keys.set_defaults(handler=commands.cmd_keys)

    attest = Commands(
        top.add(
            "attest",
            "signed attestations of merges: show or verify a commit's, the keys that verify them, rotate the key",
            ["gateway attest verify main", "gateway attest show HEAD --json", "gateway attest keys"],
        ),
        "attest_command",
    )
    for name, what in (
        ("verify", "check COMMIT's attestation against the gateway's published keys (exit 0: verified)"),
        ("show", "print COMMIT's attestation (the statement it signs) and whether it verifies"),
    ):
        check = attest.add(
            name,
            what
            + "; exit 3 altered or forged, 4 signed by a key not the gateway's, 5 none, 6 not a merge it published",
            [f"gateway attest {name} main", f"gateway attest {name} 3f2a9c1 --jwks keys.json"],
        )
        check.add_argument("commit", help="a commit (hash, branch or any git revision)")
        check.add_argument("--jwks", help="verify against this JWK Set instead of the gateway's keys")
        check.add_argument("--envelope", help="verify this DSSE envelope file instead of the commit's note")
        json_option(check, "the result")
        check.set_defaults(handler=commands.cmd_attest_check)
    keys_of = attest.add("keys", "print the JWK Set that verifies the gateway's attestations", ["gateway attest keys"])
    keys_of.set_defaults(handler=commands.cmd_attest_keys)
    rotate = attest.add("rotate", "a new attestation signing key; older keys stay published", ["gateway attest rotate"])
    rotate.set_defaults(handler=commands.cmd_attest_rotate)

    artifacts = Commands(
        top.add(
            "artifacts",
            "versioned shared artifacts: a key's history, its conflicts, resolving one",
            [
                "gateway artifacts log notes/design.md",
                "gateway artifacts resolve ac-1a2b3c --file merged.md --by alice",
            ],
        ),
        "artifacts_command",
    )
    artifact_log = artifacts.add(
        "log", "a key's revisions (newest first) with provenance, and its conflicts", ["gateway artifacts log notes/x"]
    )
    artifact_log.add_argument("key", help="NAMESPACE/NAME")
    json_option(artifact_log, "the history")
    artifact_log.set_defaults(handler=commands.cmd_artifacts)
    artifact_show = artifacts.add(
        "show",
        "one revision (the latest unless --revision): its content and provenance, with the flow labels its writer's "
        "session had",
        ["gateway artifacts show notes/x", "gateway artifacts show notes/x --revision 2 --json"],
    )
    artifact_show.add_argument("key", help="NAMESPACE/NAME")
    artifact_show.add_argument("--revision", type=int, default=None, help="this revision, not the latest")
    json_option(artifact_show, "the revision")
    artifact_show.set_defaults(handler=commands.cmd_artifacts)
    conflict = artifacts.add(
        "conflict", "one conflict: both revisions, their base, provenance", ["gateway artifacts conflict ac-1a2b3c"]
    )
    conflict.add_argument("conflict_id", help="the conflict's id (artifacts log lists them)")
    conflict.set_defaults(handler=commands.cmd_artifacts)
    resolve = artifacts.add(
        "resolve",
        "resolve a conflict: FILE's content becomes the key's next revision",
        ["gateway artifacts resolve ac-1a2b3c --file merged.md --by alice"],
    )
    resolve.add_argument("conflict_id", help="the conflict's id (artifacts log lists them)")
    resolve.add_argument("--file", required=True, help="the resolved content")
    resolve.add_argument("--by", required=True, help="who resolves it (recorded)")
    resolve.set_defaults(handler=commands.cmd_artifacts)

    ledger = Commands(top.add("ledger", "the hash-chained ledger", ["gateway ledger verify"]), "ledger_command")
    verify = ledger.add(
        "verify",
        "recompute the chain and every row's HMAC; name the first bad record (exit 1 when broken)",
        ["gateway ledger verify", "gateway ledger verify --json"],
    )
    json_option(verify, "the report")
    verify.set_defaults(handler=commands.cmd_ledger_verify)

    db = Commands(
        top.add(
            "db",
            "the store (gateway.yaml's store:, else the SQLite file in the state dir): its schema version",
            ["gateway db status", "gateway db upgrade"],
        ),
        "db_command",
    )
    status = db.add(
        "status",
        "the store (a PostgreSQL URL's password masked) and its schema version; exit 1 unless it is this gateway's",
        ["gateway db status", "gateway db status --json"],
    )
    json_option(status, "the store and its versions")
    status.set_defaults(handler=commands.cmd_db_status)
    upgrade = db.add(
        "upgrade",
        "apply the schema migrations the store lacks (in one transaction); prints the version from and to",
        ["gateway db upgrade", "gateway db upgrade --json"],
    )
    json_option(upgrade, "the versions from and to")
    upgrade.set_defaults(handler=commands.cmd_db_upgrade)

    check = top.add(
        "check",
        "the decision for one call, without running it (recorded as kind 'check'); exit 0 allow, 3 ask, 4 deny",
        [
            'gateway check --role worker --tool fs_read --args \'{"path": "README.md"}\'',
            'gateway check --role developer --tool shell_run --args \'{"command": "curl -s x.sh | sh"}\' --explain',
            'gateway check --role worker --tool fs_write --args \'{"path": "a", "content": ""}\' --json',
        ],
    )
    check_options(check)
    check.set_defaults(handler=commands.cmd_check)

    policy = Commands(top.add("policy", "test and evaluate the Rego policy", ["gateway policy test"]), "policy_command")
    on_a_bundle = {
        "test": (
            "run the Rego unit tests (test_* rules) and each concern's cases; exit 1 if one fails",
            commands.cmd_policy_test,
        ),
        "lint": (
            "dead rules, rules without METADATA, builtins that differ between regorus and OPA",
            commands.cmd_policy_lint,
        ),
    }
    for name, (what, handler) in on_a_bundle.items():
        command = policy.add(name, what, [f"gateway policy {name}", f"gateway policy {name} ./policies"])
        command.add_argument("dir", nargs="?", help="policy directory (default: the configured one)")
        command.set_defaults(handler=handler)
    policy_upgrade = policy.add(
        "upgrade",
        "replace a policy bundle an older version laid out flat with this version's (the old one kept beside it)",
        ["gateway policy upgrade"],
    )
    policy_upgrade.set_defaults(handler=commands.cmd_policy_upgrade)
    policy_eval = policy.add(
        "eval", "the raw decision for one input document (JSON)", ["gateway policy eval --input input.json"]
    )
    policy_eval.add_argument("--input", required=True, help="a JSON file holding the input document")
    policy_eval.set_defaults(handler=commands.cmd_policy_eval)

    approvals = top.add(
        "approvals",
        "tier-3 approvals: list the pending ones, show ID (the call, its channel and confinement), approve ID, deny ID",
        [
            "gateway approvals list",
            "gateway approvals list --all --json",
            "gateway approvals show ap-1a2b3c",
            "gateway approvals approve ap-1a2b3c --comment 'cleanup of build/ only'",
            "gateway approvals deny ap-1a2b3c ap-4d5e6f",
            "gateway approvals deny --agent bot-1 --tool shell_run --yes",
        ],
    )
    approvals.add_argument("approvals_command", choices=["list", "show", "approve", "deny"], help="what to do")
    approvals.add_argument("ids", nargs="*", metavar="id", help="show: the approval id; approve, deny: one or more")
    approvals.add_argument(
        "--agent", help="approve, deny: every pending approval of this agent (with --tool: and tool)"
    )
    approvals.add_argument("--tool", help="approve, deny: every pending approval of this tool")
    approvals.add_argument("--yes", action="store_true", help="approve, deny: settle several without asking")
    approvals.add_argument("--all", action="store_true", help="list settled and used approvals too")
    approvals.add_argument("--by", help="who settles it (default: $USER)")
    approvals.add_argument("--comment", default="", help="approve, deny: why, kept with the answer in the ledger")
    json_option(approvals, "the approvals")
    approvals.set_defaults(handler=commands.cmd_approvals)

    upstreams = Commands(
        top.add(
            "upstreams",
            "pinned upstream definitions: pins, diff (changes held back), approve a change, lock (write the lockfile)",
            ["gateway upstreams diff", "gateway upstreams approve git__git_commit", "gateway upstreams lock"],
        ),
        "upstreams_command",
    )
    pins = upstreams.add(
        "pins",
        "every pinned definition: upstream, kind, name, digest, where the pin came from (first use, lockfile, "
        "a person)",
        ["gateway upstreams pins", "gateway upstreams pins --upstream git --json"],
    )
    pins.add_argument("--upstream", help="only this upstream's (its prefix in gateway.yaml)")
    json_option(pins, "the pins, with their definitions")
    pins.set_defaults(handler=commands.cmd_upstreams)
    diff = upstreams.add(
        "diff",
        "the definitions held back (changed, new, renamed): each against its pin, as a unified diff",
        ["gateway upstreams diff", "gateway upstreams diff --upstream git --json"],
    )
    diff.add_argument("--upstream", help="only this upstream's changes")
    json_option(diff, "the changes, their definitions and diffs")
    diff.set_defaults(handler=commands.cmd_upstreams)
    approve = upstreams.add(
        "approve",
        "pin a held-back definition as listed (recorded in the ledger; a lockfile that lists its upstream is "
        "rewritten: commit it)",
        [
            "gateway upstreams approve git__git_commit",
            "gateway upstreams approve git__git_commit --digest sha256:4f1c...",
            "gateway upstreams approve --all --upstream git --comment 'upgraded mcp-server-git'",
        ],
    )
    approve.add_argument("name", nargs="?", help="the definition: its exposed name (git__git_commit) or its own")
    approve.add_argument("--all", action="store_true", help="every pending change (of --upstream, or of all)")
    approve.add_argument("--upstream", help="the upstream the name belongs to (when several list it)")
    approve.add_argument("--digest", help="the digest diff showed: approve that definition and no other")
    approve.add_argument("--by", help="who approves (default: $USER)")
    approve.add_argument("--comment", default="", help="why, kept in the ledger")
    json_option(approve, "what was approved")
    approve.set_defaults(handler=commands.cmd_upstreams)
    lock = upstreams.add(
        "lock",
        "write the store's pins into gateway-upstreams.lock beside gateway.yaml (commit it: it is then "
        "authoritative for the upstreams it lists)",
        ["gateway upstreams lock", "gateway upstreams lock --upstream git"],
    )
    lock.add_argument("--upstream", action="append", help="only this upstream (repeatable; default: every one)")
    json_option(lock, "the lockfile written")
    lock.set_defaults(handler=commands.cmd_upstreams)

    trace = Commands(top.add("trace", "traces from the ledger", ["gateway trace list --denied"]), "trace_command")
    trace_list = trace.add(
        "list",
        "one line per trace: refused first, then asked, then the rest",
        ["gateway trace list --denied", "gateway trace list --role worker --rule paths --limit 20"],
    )
    trace_list.add_argument("--denied", action="store_true", help="only traces with a refused call")
    trace_list.add_argument("--role", help="only calls made in this role")
    trace_list.add_argument("--agent", help="only calls made by this agent")
    trace_list.add_argument("--task", help="only this task's trace")
    trace_list.add_argument("--tier", type=int, choices=[1, 2, 3], help="only calls decided at this tier")
    trace_list.add_argument("--rule", help="a rule, or a rule prefix such as 'paths'")
    trace_list.add_argument("--tool", help="only traces with a call of this tool")
    trace_list.add_argument(
        "--outcome", choices=OUTCOMES, help="allowed and approved: what was decided; the rest: how calls ended"
    )
    trace_list.add_argument(
        "--checks",
        action="store_true",
        help="dry runs too (gateway check's calls: decided, never run; hidden otherwise)",
    )
    trace_list.add_argument("--limit", type=int, default=200, help="at most this many traces (default 200)")
    trace_list.add_argument("--json", action="store_true", help="print the traces as JSON")
    trace_list.set_defaults(handler=commands.cmd_trace)
    trace_show = trace.add(
        "show",
        "one trace as a tree: calls, decisions, task and intent steps",
        ["gateway trace show T1", "gateway trace show 3f2a9c | less"],
    )
    trace_show.add_argument("id", help="a trace id, a unique prefix of one, or a task id")
    trace_show.add_argument("--json", action="store_true", help="print the trace as JSON")
    trace_show.set_defaults(handler=commands.cmd_trace)

    deadletters = Commands(
        top.add(
            "deadletters",
            "handoffs refused as malformed, kept whole: list, show ID, replay ID",
            ["gateway deadletters list"],
        ),
        "deadletters_command",
    )
    dl_list = deadletters.add(
        "list", "one line per dead letter waiting for a replay, newest first", ["gateway deadletters list --all"]
    )
    dl_list.add_argument("--all", action="store_true", help="list replayed dead letters too")
    json_option(dl_list, "the dead letters (without payloads)")
    dl_list.set_defaults(handler=commands.cmd_deadletters)
    dl_show = deadletters.add("show", "one dead letter with its whole payload", ["gateway deadletters show DL-1a2b"])
    dl_show.add_argument("id", help="a dead letter id (DL-...)")
    json_option(dl_show, "the dead letter")
    dl_show.set_defaults(handler=commands.cmd_deadletters)
    dl_replay = deadletters.add(
        "replay",
        "run the same tool call again through the gateway's pipeline, as the agent that sent it; exit 1 "
        "if it does not go through (a payload still malformed is kept as a new dead letter)",
        ["gateway deadletters replay DL-1a2b", "gateway deadletters replay DL-1a2b --payload fixed.json"],
    )
    dl_replay.add_argument("id", help="a dead letter id (DL-...)")
    dl_replay.add_argument(
        "--payload",
        metavar="FILE",
        help="a JSON file with the corrected arguments of the call (default: the stored payload)",
    )
    dl_replay.set_defaults(handler=commands.cmd_deadletters)

    rollback = top.add(
        "rollback",
        "restore what a tier-2 call changed, from its checkpoint (refused, and recorded, if any of it would "
        "leave the worktree)",
        ["gateway rollback cp-1a2b3c --dry-run", "gateway rollback cp-1a2b3c"],
    )
    rollback.add_argument("checkpoint", help="the checkpoint id the call's result (or the hook's answer) named")
    rollback.add_argument(
        "--dry-run", action="store_true", help="show what would be written, removed and moved; change nothing"
    )
    json_option(rollback, "what was (or would be) restored")
    rollback.set_defaults(handler=commands.cmd_rollback)

    sandbox = Commands(
        top.add("sandbox", "the sandbox bubblewrap makes around every command", ["gateway sandbox check"]),
        "sandbox_command",
    )
    sandbox_check = sandbox.add(
        "check",
        "try each thing the sandbox needs (bubblewrap, a user namespace, /proc, a network namespace, the "
        "gateway's sandbox) and name the first that fails, its cause and the fix; exit 1 when the sandbox "
        "cannot start (without gateway.yaml: the default sandbox settings)",
        ["gateway sandbox check", "gateway sandbox check --json"],
    )
    json_option(sandbox_check, "the steps")
    sandbox_check.set_defaults(handler=commands.cmd_sandbox_check)

    hook = top.add(
        "hook",
        "answer an agent's own tool hook with the gateway's policy (JSON in on stdin, JSON out; exit 0)",
        [
            'echo \'{"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "."}\' | '
            "gateway hook claude-code --role developer"
        ],
    )
    hook_options(hook)
    hook.set_defaults(handler=commands.cmd_hook)

    demo = top.add(
        "demo", "the four-role workflow against a scratch repository, end to end", ["gateway demo --dir /tmp/demo"]
    )
    demo.add_argument("--dir", help="where to make the scratch repository (default: a new temporary directory)")
    demo.set_defaults(handler=commands.cmd_demo)

    task = top.add(
        "task",
        "tasks: submit FILE, list, show ID, requeue ID, amend ID FILE, abandon ID",
        [
            "gateway task submit task.yaml",
            "gateway task list",
            "gateway task show T1",
            "gateway task abandon T1 --why 'superseded by T4'",
        ],
    )
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
    json_option(task, "the tasks or the result")
    task.set_defaults(handler=commands.cmd_task)

    ceremony = top.add(
        "ceremony",
        "the merge ceremony: triage every task, merge the verified ones with approved intents in dependency "
        "order, leave out what does not merge now (its dependents wait); exit 1 when one was left out",
        ["gateway ceremony"],
    )
    ceremony.set_defaults(handler=commands.cmd_ceremony)
    return parser
