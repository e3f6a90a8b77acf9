"""Runs inside the sandbox in front of a command the decision allowed some network egress.

The sandbox has its own network namespace with nothing but a loopback, so a program cannot reach any
host by itself. This script listens on that loopback, points the usual proxy variables at itself, runs
the command, and relays each connection the command makes to it over a Unix socket to the gateway's
egress proxy (gateway/egress.py), which lets through only the hosts the decision named. It uses the
standard library only and is started with ``python -I``, so nothing in the workspace can change it.

The sandbox's seccomp filter (gateway/seccomp.py, read from the descriptor given) forbids new Unix
sockets, which this launcher needs for every connection: it puts the filter on the command alone, in the
forked child before exec, and makes itself undumpable so the command cannot trace it or write its memory.

    python -I egress_inside.py /run/gateway-egress.sock 3 -- /bin/bash -c 'pip download requests'
"""

import contextlib
import importlib.util
import os
import socket
import sys
import threading
from types import ModuleType

LISTEN = ("127.0.0.1", 3128)


def relay(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def forward(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=relay, args=(client, upstream), daemon=True).start()
    relay(upstream, client)
    client.close()
    upstream.close()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=forward, args=(client, path), daemon=True).start()


def load_seccomp() -> ModuleType:
    """gateway/seccomp.py beside this file (``python -I`` puts no directory of ours on sys.path)."""
    spec = importlib.util.spec_from_file_location("seccomp", os.path.join(os.path.dirname(__file__), "seccomp.py"))
    assert spec is not None and spec.loader is not None
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    spec.loader.exec_module(module)
    return module


def read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as source:
        return source.read()


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--" or not argv[2].isdigit():
        print("usage: egress_inside.py SOCKET SECCOMP_FD -- COMMAND...", file=sys.stderr)
        return 2
    path, command = argv[1], argv[4:]
    seccomp = load_seccomp()
    program = read_all(int(argv[2]))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(LISTEN)
    listener.listen(64)
    proxy = f"http://{LISTEN[0]}:{LISTEN[1]}"
    env = dict(os.environ)
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = proxy
    for name in ("no_proxy", "NO_PROXY"):
        env.pop(name, None)
    seccomp.undumpable()  # before the fork: the child's exec makes it dumpable again, this process stays not
    child = os.fork()  # before any thread starts, so the child may call into libc freely
    if child == 0:
        try:
            seccomp.install(program)
            os.execvpe(command[0], command, env)
        except OSError as exc:
            print(f"egress: cannot run {command[0]}: {exc}", file=sys.stderr, flush=True)
        os._exit(127)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
