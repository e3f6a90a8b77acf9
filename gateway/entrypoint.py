"""The container image's entrypoint: before a command that serves, say exactly what the sandbox lacks here.

In a container, bubblewrap needs what the runtime may withhold: a user namespace (Docker's default seccomp
profile refuses it), a /proc of its own (refused while the runtime masks paths in /proc). Without them no
command an agent asks for would ever run, and the gateway would learn it one call at a time. So before any
command that serves (``gateway ... serve ...``, also inside ``sh -c``), this runs the checks of
``gateway sandbox check`` (gateway/sandbox_probe.py) with the same ``--config`` and prints them on stderr,
for the container's log: on a failure, the first failing step with its cause and the option that fixes it,
and exit 1; otherwise, and for every other command, it executes the command as given. ``sandbox: {mode:
off}`` in gateway.yaml passes the check (and says so).

    ENTRYPOINT ["python", "-m", "gateway.entrypoint"]
    CMD ["sh", "-c", "test -f gateway.yaml || gateway init . && exec gateway serve --http 0.0.0.0:8787"]
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]

CONFIG_FILE = "gateway.yaml"  # as `gateway` reads it when no --config is given


def serves(argv: list[str]) -> tuple[bool, str | None]:
    """Whether the command serves, and the --config it names (the words of ``sh -c`` scripts included)."""
    words = " ".join(argv).split()
    config = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--config"), None)
    return "serve" in words and any(w.endswith("gateway") for w in words), config


def main(argv: list[str] | None = None) -> int:
    command = list(sys.argv[1:] if argv is None else argv)
    if not command:
        print("gateway entrypoint: no command to run", file=sys.stderr)
        return 2
    serving, config = serves(command)
    if serving:
        from gateway.sandbox_probe import diagnose_config

        steps = diagnose_config(config or CONFIG_FILE)
        for step in steps:
            print(f"gateway sandbox: {step.line()}", file=sys.stderr)
        if not all(step.ok for step in steps):
            print(
                "gateway entrypoint: not serving: the sandbox cannot start in this container, so no command would "
                "run (docs/container.md lists the options per runtime)",
                file=sys.stderr,
            )
            return 1
    sys.stdout.flush()
    os.execvp(command[0], command)
    return 0  # not reached: execvp replaces this process


if __name__ == "__main__":
    sys.exit(main())
