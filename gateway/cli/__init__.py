"""The ``gateway`` command: argument parsing, exit codes and error handling (commands in ``commands``).

Importing this package loads nothing heavier than argparse: each command imports what it needs when it
runs, so ``gateway check`` and ``gateway hook claude-code`` start in a fraction of a second
(bench/bench_startup.py measures it).

    gateway init repo
    gateway token issue --role worker --agent w1 --task T1 --ttl 8h
    gateway check --role worker --tool fs_read --args '{"path": "README.md"}'

Exit codes (docs/cli.md has them per command; each code means one thing in every command): 0 done
(``check``: allowed), 1 done and the answer is "no" (a broken ledger, a failing policy test, a ceremony that
left a task out, a replay that did not go through, a store at another schema version than this gateway's),
2 an error (bad usage or input, an unknown role, tool or id, a missing or unreadable file or config, a store
that is unreachable or at a schema version it cannot use, an address ``serve`` cannot listen on: one line on
stderr), 3 ``check``: asks a person (tier 3), 4 ``check``: denied, 70 a bug in the gateway (the traceback is
printed: report it), 130 interrupted, 141 stdout closed early (``| head``).
"""

from __future__ import annotations

import gc
import os
import sys

__all__ = ["EXIT_ASK", "EXIT_BUG", "EXIT_DENY", "EXIT_ERROR", "EXIT_FAILED", "build_parser", "gc_as_default", "main"]

EXIT_FAILED = 1
EXIT_ERROR = 2  # also argparse's code for a usage error
EXIT_ASK = 3
EXIT_DENY = 4
EXIT_BUG = 70  # sysexits.h EX_SOFTWARE: not Python's 1, which means "the answer is no" here
EXIT_INTERRUPTED = 130
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command killed by a closed pipe
STRUCTLOG_EXTRAS = ("rich", "greenlet")  # what structlog imports when installed and the gateway never uses
SETS_ITS_OWN_LOGGING = frozenset({"serve", "check", "hook"})
# The collector's first threshold while a command starts: see main.
STARTUP_GC_THRESHOLD = 100_000
DEFAULT_GC_THRESHOLDS = gc.get_threshold()


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    # Start-up imports make some 175k objects that live as long as the process, and free almost none: at the
    # default first threshold (700) the collector ran ~250 times meanwhile, 0.15 s of CPU of ``serve``'s start
    # for nothing found. A high one still bounds memory; ``serve`` puts the default back once it is ready
    # (gc_as_default), and every other command is done in moments.
    gc.set_threshold(STARTUP_GC_THRESHOLD, *DEFAULT_GC_THRESHOLDS[1:])
    try:
        from gateway.fast import answer

        answered = answer(arguments)  # check and the hook, asked of a running gateway (nothing else loaded)
        return answered if answered is not None else run(arguments)
    except BrokenPipeError:
        # the reader went away (`gateway trace show X | head`): stop quietly; point stdout at /dev/null so
        # the interpreter's own flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_PIPE


def import_structlog_plain() -> None:
    """Import structlog with ``import rich`` and ``import greenlet`` failing for that moment only: structlog
    imports each whenever it is installed, rich for console tracebacks (about 70 ms of a command's cold start)
    and greenlet for the deprecated structlog.threadlocal, neither of which the gateway's logging uses (JSON
    lines, gateway.telemetry.configure_logging). Afterwards both import as usual (``gateway trace show``
    prints with rich)."""
    if "structlog" in sys.modules:
        return
    blocked = [name for name in STRUCTLOG_EXTRAS if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # a None entry makes the import raise ImportError
    try:
        import structlog  # noqa: F401
    finally:
        for name in blocked:
            del sys.modules[name]


def gc_as_default() -> None:
    """The collector's thresholds back to CPython's, for a process that now runs for long (``serve``)."""
    gc.set_threshold(*DEFAULT_GC_THRESHOLDS)


def configure_plain_logging() -> None:
    """Warnings and errors as JSON lines on stderr: stdout carries the command's answer."""
    import_structlog_plain()
    from gateway.telemetry import configure_logging

    configure_logging("warning")


def __getattr__(name: str) -> object:
    """``build_parser``, loaded when asked for: the fast path of check and the hook never needs it."""
    if name == "build_parser":
        from gateway.cli.parser import build_parser

        return build_parser
    raise AttributeError(name)


def run(argv: list[str] | None) -> int:
    import_structlog_plain()  # every command, serve too: none logs through rich
    from gateway.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    # serve sets its own level; check and the hook only when they decide themselves (not when a running
    # gateway answers: gateway/fast.py)
    if args.command not in SETS_ITS_OWN_LOGGING:
        configure_plain_logging()
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # main's to answer
        raise
    except Exception as exc:
        # a GatewayError was raised from gateway.errors, so that module is loaded; a command answered by a
        # running gateway never loads it (nor pydantic, which it imports)
        errors = sys.modules.get("gateway.errors")
        if errors is not None and isinstance(exc, errors.GatewayError):
            print(f"gateway: {exc.message}", file=sys.stderr)
            return EXIT_ERROR
        # a bug: the traceback is what a report needs, and the exit code says it is one
        import traceback

        traceback.print_exc()
        print("gateway: internal error (a bug in the gateway): please report the traceback above", file=sys.stderr)
        return EXIT_BUG
