"""The options of ``gateway check`` and ``gateway hook``: the full parser's, and the small parser the fast path
reads them with before anything else of the command line is loaded (gateway/fast.py).

    check_options(parser.add_parser("check"))
"""

from __future__ import annotations

import argparse

__all__ = ["CONFIG_FILE", "check_options", "hook_options", "json_option"]

CONFIG_FILE = "gateway.yaml"  # as gateway.config has it; not imported, so `gateway --help` loads no pydantic


def json_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--json", action="store_true", help=f"print {what} as JSON (the default when stdout is not a terminal)"
    )


def check_options(check: argparse.ArgumentParser) -> None:
    check.add_argument("--role", required=True, help="the role to decide as")
    check.add_argument("--agent", default="cli", help="the agent name the policy sees")
    check.add_argument("--task", help="the task the agent works on (a worker's claim)")
    check.add_argument("--tool", required=True, help="the tool name, e.g. fs_read, shell_run or git__git_status")
    check.add_argument("--args", default="{}", help="the call's arguments as a JSON object")
    check.add_argument(
        "--explain", action="store_true", help="also print the input document the policy judged and every rule it fired"
    )
    json_option(check, "the decision (and with --explain, 'input' and 'fired')")


def hook_options(hook: argparse.ArgumentParser) -> None:
    hook.add_argument("client", choices=["claude-code"], help="whose hook protocol to speak")
    hook.add_argument("--role", default="worker", help="role to decide as when GATEWAY_TOKEN is not set")
    hook.add_argument("--agent", default="claude-code", help="agent name to record when GATEWAY_TOKEN is not set")
