"""Runs inside the sandbox in front of a command the decision allowed some network egress.

The sandbox has its own network namespace with nothing but a loopback, so a program cannot reach any
host by itself. This script listens on that loopback, points the usual proxy variables at itself, runs
the command, and relays each connection the command makes to it over a Unix socket to the gateway's
egress proxy (gateway/egress.py), which lets through only the hosts the decision named. It uses the
standard library only and is started with ``python -I``, so nothing in the workspace can change it.

    python -I egress_inside.py /run/gateway-egress.sock -- /bin/bash -c 'pip download requests'
"""

import contextlib
import os
import socket
import subprocess
import sys
import threading

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


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: egress_inside.py SOCKET -- COMMAND...", file=sys.stderr)
        return 2
    path, command = argv[1], argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(LISTEN)
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    proxy = f"http://{LISTEN[0]}:{LISTEN[1]}"
    env = dict(os.environ)
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = proxy
    for name in ("no_proxy", "NO_PROXY"):
        env.pop(name, None)
    try:
        return subprocess.call(command, env=env)
    except OSError as exc:
        print(f"egress: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
