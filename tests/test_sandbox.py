"""The OS sandbox around every command the gateway runs for an agent: the wall that holds when the shell
analysis is wrong. Each test runs real commands through the whole pipeline with a real MCP client; the
commands that try to get out are scripts (an unknown program: tier 2, run after a checkpoint), so the
analysis has nothing to catch and only the sandbox stands in the way."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import add_role, inproc_client, ledger_rows, reconfigure, text_of, token

from gateway import seccomp
from gateway.config import SandboxConfig
from gateway.decision_log import read_entries
from gateway.process import free_port, server_process
from gateway.repo import GitRefused, Repo
from gateway.runtime import Gateway
from gateway.sandbox import Sandbox, SandboxUnavailable

pytestmark = pytest.mark.anyio

ECHO = Path(__file__).parent / "servers" / "echo_server.py"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A $HOME with credentials in the usual places; the gateway under test runs with it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-SSH-KEY\n")
    (home / ".netrc").write_text("machine example.com login me password hunter2\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def dev(config: Any, home: Path) -> tuple[Gateway, str]:
    """A single-agent role that works in the workspace itself (like `developer`), max tier 2."""
    add_role(config, "dev", ["fs_*", "shell_run", "git_*"], max_tier=2)
    return Gateway(config), token(config, "dev", agent="d1")


async def run_script(gateway: Gateway, bearer: str, script: str, name: str = "probe.sh") -> dict[str, Any]:
    """Write a script with fs_write and run it with shell_run: tier 2, nothing for the analysis to see."""
    async with inproc_client(gateway, bearer) as client:
        written = await client.call_tool("fs_write", {"path": name, "content": script})
        assert not written.is_error, text_of(written)
        result = await client.call_tool("shell_run", {"command": f"sh {name}"})
    assert not result.is_error or "exit_code" in (result.structured_content or {}), text_of(result)
    return dict(result.structured_content or {})


async def test_a_command_cannot_reach_the_state_credentials_or_anything_outside(
    dev: tuple[Gateway, str], repo: Path, home: Path, tmp_path: Path
) -> None:
    gateway, bearer = dev
    state = gateway.config.state
    outside = tmp_path / "outside.txt"
    script = f"""
        cat {state}/keys/*.pem {state}/keys/active 2>&1
        ls -A {state} 2>&1
        cat {home}/.ssh/id_ed25519 {home}/.netrc 2>&1
        echo escaped > {outside} 2>&1
        echo hook > .git/hooks/pre-commit 2>&1
        echo '[core] fsmonitor = evil' >> .git/config 2>&1
        echo 'sandbox: {{mode: off}}' >> gateway.yaml 2>&1
        sqlite3 {state}/gateway.db 'delete from ledger' 2>&1
        echo inside > inside.txt && echo wrote-inside
    """
    result = await run_script(gateway, bearer, script)
    out = result["stdout"] + result["stderr"]
    assert "PRIVATE" not in out and "BEGIN" not in out and "hunter2" not in out
    assert "wrote-inside" in out and (repo / "inside.txt").read_text() == "inside\n"
    assert not outside.exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert "sandbox" not in (repo / "gateway.yaml").read_text()
    assert gateway.ledger.verify().ok and len(ledger_rows(gateway)) >= 4
    # the call is recorded as confined, and the policy saw what confines it
    row = ledger_rows(gateway)[-1]
    assert row.tool == "shell_run" and row.detail["sandbox"] == {"mode": "bubblewrap", "writable": [str(repo)]}
    entry = read_entries(gateway.config.decision_log_path)[-1]
    sandbox = entry["input"]["context"]["sandbox"]
    assert sandbox["confined"] and sandbox["network"] == "none" and "gateway state" in sandbox["hides"]


async def test_a_workers_command_can_write_only_its_worktree(config: Any, repo: Path) -> None:
    gateway = Gateway(config)
    manifest = {"task_id": "T1", "objective": "o", "allowed_paths": ["src/**", "probe.sh"], "verification": ["true"]}
    other = {**manifest, "task_id": "T2"}
    async with inproc_client(gateway, token(config, "planner", agent="p1")) as client:
        for m in (manifest, other):
            assert not (await client.call_tool("task_submit", {"manifest": m})).is_error
    async with inproc_client(gateway, token(config, "worker", agent="w2")) as client:
        t2 = (await client.call_tool("task_claim", {"task_id": "T2"})).structured_content["worktree"]
    worker = token(config, "worker", agent="w1")
    async with inproc_client(gateway, worker) as client:
        tree = Path((await client.call_tool("task_claim", {"task_id": "T1"})).structured_content["worktree"])
    main_before = Repo(repo).run("rev-parse", "refs/heads/main").strip()
    script = f"""
        git update-ref refs/heads/main HEAD 2>&1; echo update-ref=$?
        git branch -f main HEAD 2>&1; echo branch=$?
        echo x > {repo}/src/app.py 2>&1
        ls {t2} 2>&1; echo x > {t2}/src/x.py 2>&1
        echo mine > src/mine.py && echo wrote-mine
    """
    result = await run_script(gateway, worker, script, name="probe.sh")
    out = result["stdout"] + result["stderr"]
    assert "wrote-mine" in out and (tree / "src" / "mine.py").read_text() == "mine\n"
    assert "update-ref=0" not in out and "branch=0" not in out
    assert Repo(repo).run("rev-parse", "refs/heads/main").strip() == main_before
    assert (repo / "src" / "app.py").read_text().startswith("def answer")
    assert not (Path(t2) / "src" / "x.py").exists()


HELLO = Path(__file__).parent / "servers" / "hello_http.py"


@pytest.fixture
def web() -> Iterator[str]:
    """An HTTP server on the host's loopback, in a process of its own (the gateway refuses egress to any port its
    own process listens on, and an in-process gateway's process is this one): what a command would like to reach."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with server_process([sys.executable, str(HELLO), str(port)], url, "the hello server"):
        yield url


@pytest.fixture
def dev_lan(config: Any, home: Path) -> tuple[Gateway, str]:
    """``dev``, on a gateway whose gateway.yaml lets egress reach the host's loopback (egress.allow_addresses)."""
    config = reconfigure(config, egress={"allow_addresses": ["127.0.0.1"]})
    add_role(config, "dev", ["fs_*", "shell_run", "git_*"], max_tier=2)
    return Gateway(config), token(config, "dev", agent="d1")


async def test_no_network_unless_the_decision_allowed_it(dev_lan: tuple[Gateway, str], web: str) -> None:
    gateway, bearer = dev_lan
    fetch = f"import urllib.request\nprint(urllib.request.urlopen({web!r}, timeout=5).read().decode())\n"
    async with inproc_client(gateway, bearer) as client:
        await client.call_tool("fs_write", {"path": "fetch.py", "content": fetch})
        quiet = (await client.call_tool("shell_run", {"command": "python3 fetch.py"})).structured_content
        assert quiet["exit_code"] != 0 and "hello" not in quiet["stdout"]
        assert "Connection refused" in quiet["stderr"] or "URLError" in quiet["stderr"]

        asked = await client.call_tool("shell_run", {"command": f"curl -s {web}"})
        pending = asked.structured_content
        assert pending["status"] == "approval_pending" and any("127.0.0.1" in r for r in pending["reasons"])
        gateway.approvals.settle(pending["approval_id"], approve=True, by="a person")
        approved = (await client.call_tool("shell_run", {"command": f"curl -s {web}"})).structured_content
    assert approved["exit_code"] == 0 and approved["stdout"] == "hello from the host"


async def test_approved_egress_reaches_only_the_hosts_it_named(dev_lan: tuple[Gateway, str], web: str) -> None:
    """The approved command names 127.0.0.1; what it runs then tries another name for the same server
    (through the proxy: refused) and the allowed host without the proxy (no route: the sandbox has none)."""
    gateway, bearer = dev_lan
    port = web.rsplit(":", 1)[1].strip("/")
    sneak = (
        "import socket, urllib.request, urllib.error\n"
        f"try:\n    urllib.request.urlopen('http://localhost:{port}/', timeout=5)\n    print('OTHER-NAME-REACHED')\n"
        "except urllib.error.HTTPError as exc:\n    print('proxy said', exc.code)\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n    print('DIRECT-REACHED')\n"
        "except OSError as exc:\n    print('direct:', exc)\n"
        "try:\n    socket.socket(socket.AF_UNIX)\n    print('UNIX-SOCKET-MADE')\n"
        "except OSError as exc:\n    print('unix:', exc)\n"
    )
    command = f"curl -s {web} && python3 sneak.py"
    async with inproc_client(gateway, bearer) as client:
        await client.call_tool("fs_write", {"path": "sneak.py", "content": sneak})
        pending = (await client.call_tool("shell_run", {"command": command})).structured_content
        gateway.approvals.settle(pending["approval_id"], approve=True, by="a person")
        ran = (await client.call_tool("shell_run", {"command": command})).structured_content
    out = ran["stdout"]
    assert out.startswith("hello from the host") and "proxy said 403" in out, ran
    assert "OTHER-NAME-REACHED" not in out and "DIRECT-REACHED" not in out
    # the launcher reaches the proxy by a Unix socket; the command it runs still cannot make one
    assert "unix: [Errno 1] Operation not permitted" in out and "UNIX-SOCKET-MADE" not in out
    egress = [(r.outcome, r.detail) for r in ledger_rows(gateway, kind="egress")]
    assert [outcome for outcome, _ in egress] == ["ok", "denied"]
    assert egress[0][1]["target"] == f"127.0.0.1:{port}" and "localhost" in egress[1][1]["refused"]
    assert egress[0][1]["address"] == "127.0.0.1" and egress[1][1]["asked"] == f"http://localhost:{port}"


async def test_loopback_is_refused_unless_gateway_yaml_names_it(dev: tuple[Gateway, str], web: str) -> None:
    """A person approved a command that names 127.0.0.1; the proxy still refuses the host's loopback, because
    gateway.yaml does not name it (egress.allow_addresses), and records the address it would have reached."""
    gateway, bearer = dev
    command = f"curl -s {web}"
    async with inproc_client(gateway, bearer) as client:
        pending = (await client.call_tool("shell_run", {"command": command})).structured_content
        gateway.approvals.settle(pending["approval_id"], approve=True, by="a person")
        ran = (await client.call_tool("shell_run", {"command": command})).structured_content
    assert "hello" not in ran["stdout"] and "loopback address" in ran["stdout"], ran
    [row] = ledger_rows(gateway, kind="egress")
    assert (
        row.outcome == "denied" and row.detail["address"] == "127.0.0.1" and "allow_addresses" in row.detail["refused"]
    )


async def test_limits_stop_a_runaway_file(config: Any, home: Path) -> None:
    config = reconfigure(config, sandbox={"file_size_mb": 1})
    add_role(config, "dev", ["fs_*", "shell_run"], max_tier=2)
    gateway = Gateway(config)
    result = await run_script(gateway, token(config, "dev"), "head -c 3000000 /dev/zero > big.bin; echo rc=$?\n")
    assert "rc=0" not in result["stdout"]
    assert (config.workspace / "big.bin").stat().st_size <= 1024 * 1024


async def test_no_sandbox_no_command(config: Any, repo: Path) -> None:
    config = reconfigure(config, sandbox={"bwrap": "/nonexistent/bwrap"})
    add_role(config, "dev", ["fs_*", "shell_run"], max_tier=2)
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "dev")) as client:
        result = await client.call_tool("shell_run", {"command": "touch ran.txt"})
    assert result.is_error and result.structured_content["error"]["code"] == "sandbox_unavailable"
    assert "apt-get install bubblewrap" in text_of(result) and "sandbox: {mode: off}" in text_of(result)
    assert not (repo / "ran.txt").exists()
    assert ledger_rows(gateway)[-1].detail["error"]["code"] == "sandbox_unavailable"


async def test_an_explicit_opt_out_runs_unconfined_and_says_so_everywhere(config: Any, repo: Path) -> None:
    from gateway.traces import Traces

    config = reconfigure(config, sandbox={"mode": "off"})
    add_role(config, "dev", ["fs_*", "shell_run"], max_tier=2)
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "dev")) as client:
        result = await client.call_tool("shell_run", {"command": "touch ran.txt"})
    assert not result.is_error and (repo / "ran.txt").exists()
    row = ledger_rows(gateway)[-1]
    assert row.detail["sandbox"]["mode"] == "off"
    assert read_entries(config.decision_log_path)[-1]["input"]["context"]["sandbox"]["confined"] is False
    trace = Traces.for_config(config).get(row.trace_id)
    assert any(call.unconfined for call in trace.calls())
    shown = json.loads(json.dumps(trace.as_dict(), default=str))
    assert any(entry.get("unconfined") for entry in shown["entries"] if entry.get("type") == "call")


async def test_a_stdio_upstream_runs_confined(config: Any, repo: Path, home: Path) -> None:
    import sys

    add_role(config, "operator", ["*"], max_tier=2)
    upstream = {"command": sys.executable, "args": [str(ECHO)], "read_only": ["peek"]}
    config = reconfigure(config, upstreams={"echo": upstream})
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "operator")) as client:
        key = await client.call_tool("echo__peek", {"path": str(gateway.config.keys_dir / "active")})
        ssh = await client.call_tool("echo__peek", {"path": str(home / ".ssh" / "id_ed25519")})
        readme = await client.call_tool("echo__peek", {"path": str(repo / "README.md")})
    assert "cannot read" in text_of(key) and "cannot read" in text_of(ssh)
    assert "# demo repo" in text_of(readme)
    assert gateway.pool.upstreams["echo"].confinement is not None


@pytest.fixture
def host_socket() -> Iterator[tuple[socket.socket, str]]:
    """A host listener on a Unix socket outside /tmp, in a directory the sandbox shows read-only (/var/tmp):
    what a database or a container runtime socket looks like to a command."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as where:
        path = f"{where}/db.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(8)
        listener.setblocking(False)
        try:
            yield listener, path
        finally:
            listener.close()


async def test_no_host_unix_socket_is_reachable_but_socketpair_works(
    dev: tuple[Gateway, str], host_socket: tuple[socket.socket, str]
) -> None:
    """The network namespace does not cover sockets in the filesystem; the seccomp filter does."""
    gateway, bearer = dev
    listener, path = host_socket
    script = f"""
        test -S {path} && echo socket-visible
        curl -s --max-time 5 --unix-socket {path} http://db/ 2>&1; echo curl=$?
        python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("{path}"); print("CONNECTED")' 2>&1
        python3 -c 'import socket; a, b = socket.socketpair(); a.send(b"x"); print("pair", b.recv(1))'
        python3 -c 'import asyncio; asyncio.run(asyncio.sleep(0)); print("asyncio-ok")'
    """
    result = await run_script(gateway, bearer, script)
    out = result["stdout"] + result["stderr"]
    assert "socket-visible" in out, out  # the path is there: only the filter stands in the way
    assert "curl=0" not in out and "CONNECTED" not in out and "Operation not permitted" in out
    assert "pair b'x'" in out and "asyncio-ok" in out
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing ever reached the host listener


def test_the_filter_refuses_unix_sockets_and_datagram_pairs() -> None:
    probe = (
        "import socket\nfrom gateway import seccomp\nseccomp.install(seccomp.program())\n"
        "for name, make in [('unix', lambda: socket.socket(socket.AF_UNIX)),\n"
        "                   ('dgram-pair', lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),\n"
        "                   ('stream-pair', socket.socketpair),\n"
        "                   ('seqpacket-pair', lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)),\n"
        "                   ('inet', lambda: socket.socket(socket.AF_INET))]:\n"
        "    try:\n        make()\n        print(name, 'ok')\n"
        "    except OSError as exc:\n        print(name, exc.errno)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:5] == ["unix 1", "dgram-pair 1", "stream-pair ok", "seqpacket-pair ok", "inet ok"]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="a 32-bit syscall by int 0x80 is x86 machine code")
def test_the_filter_kills_a_syscall_of_another_abi() -> None:
    """The filter's numbers are the host ABI's: a 32-bit syscall (which has other numbers) kills the process."""
    probe = (
        "import ctypes, mmap, sys\nfrom gateway import seccomp\n"
        "if sys.argv[1] == 'filtered':\n    seccomp.install(seccomp.program())\n"
        "code = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "code.write(bytes.fromhex('b814000000cd80c3'))  # mov eax, 20 (i386 getpid); int 0x80; ret\n"
        "print(ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(code)))())\n"
    )
    plain = subprocess.run([sys.executable, "-c", probe, "plain"], capture_output=True, text=True)
    filtered = subprocess.run([sys.executable, "-c", probe, "filtered"], capture_output=True, text=True)
    assert plain.returncode == 0 and plain.stdout.strip().isdigit()
    assert filtered.returncode == -31 and filtered.stdout == ""  # SIGSYS


def test_a_machine_the_filter_does_not_know_gets_no_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(seccomp.UnsupportedArch, match="riscv64"):
        seccomp.program("riscv64")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    sandbox = Sandbox(SandboxConfig())
    with pytest.raises(SandboxUnavailable, match="seccomp filter knows aarch64, x86_64, not 'riscv64'"):
        sandbox.command(sandbox.confine(writable=[], cwd=Path("/")), ["true"])


async def test_a_developers_git_directory_stays_in_place_and_writable(dev: tuple[Gateway, str], repo: Path) -> None:
    """The workspace's .git is a mount point: renamed, the read-only hooks and config inside it would go
    with it and a .git of the command's making would take its place, read by the gateway's own git."""
    gateway, bearer = dev
    script = """
        mv .git moved 2>&1; echo mv=$?
        mv .git/hooks .git/hooks-moved 2>&1; echo hooks=$?
        git update-ref refs/heads/side HEAD && echo ref-moved
    """
    result = await run_script(gateway, bearer, script)
    out = result["stdout"] + result["stderr"]
    assert "mv=0" not in out and "hooks=0" not in out and "busy" in out, out
    assert (repo / ".git" / "config").is_file() and not (repo / "moved").exists()
    assert "ref-moved" in out and Repo(repo).run("rev-parse", "refs/heads/side").strip()  # still writable


def test_the_gateways_git_refuses_a_commondir_file(repo: Path) -> None:
    """A commondir file inside .git would send git to a config of the writer's making (a clean filter the
    gateway's next `git add` runs); the gateway's git takes the repository from the layout instead, and
    refuses to run while the file is there (the user's own git would follow it)."""
    evil = repo / "evil"
    shutil.copytree(repo / ".git", evil)
    ran = repo.parent / "filter-ran"
    (evil / "config").write_text(f'[filter "evil"]\n\tclean = "touch {ran}; cat"\n')
    (repo / ".git" / "commondir").write_text(f"{evil}\n")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    (repo / "new.txt").write_text("new\n")
    with pytest.raises(GitRefused, match="commondir"):
        Repo(repo).run("add", "-A")
    assert not ran.exists()
    (repo / ".git" / "commondir").unlink()
    assert Repo(repo).run("rev-parse", "--git-common-dir").strip() == str(repo / ".git")


def test_the_gateways_git_never_looks_into_a_nested_repository(repo: Path) -> None:
    """A repository the agent made inside the work tree has the agent's config: status and diff in the
    outer one would run its clean filter outside the sandbox."""
    nested = repo / "nested"
    inner = Repo(nested)
    nested.mkdir()
    inner.run("init", "-q")
    ran = repo.parent / "filter-ran"
    (nested / "f").write_text("a\n")
    inner.run("add", "f")
    inner.run("commit", "-q", "-m", "inner")
    Repo(repo).run("add", "nested")  # recorded as a gitlink, as a submodule would be
    (nested / ".git" / "config").write_text(f'[filter "evil"]\n\tclean = "touch {ran}; cat"\n')
    (nested / ".gitattributes").write_text("* filter=evil\n")
    (nested / "f").write_text("b\n")  # the same size: git must read the file, through the filter
    Repo(repo).run("status", "--porcelain=v1", "--branch", "--untracked-files=all")
    Repo(repo).run("diff", "--no-ext-diff", "HEAD")
    assert not ran.exists()


async def test_limits_stop_a_busy_loop(config: Any, home: Path) -> None:
    """Killed by the CPU-time limit (SIGKILL at the hard limit, SIGXCPU before it), not by the timeout."""
    config = reconfigure(config, sandbox={"cpu_s": 1})
    add_role(config, "dev", ["fs_*", "shell_run"], max_tier=2)
    gateway = Gateway(config)
    result = await run_script(gateway, token(config, "dev"), "sh -c 'while :; do :; done'; echo rc=$?\n")
    assert re.search(r"rc=(137|152)", result["stdout"]) and not result["timed_out"], result


@pytest.mark.skipif(os.geteuid() == 0, reason="RLIMIT_NPROC does not bind root (Linux exempts it)")
async def test_limits_stop_a_fork_bomb(config: Any, home: Path) -> None:
    config = reconfigure(config, sandbox={"processes": 16})
    add_role(config, "dev", ["fs_*", "shell_run"], max_tier=2)
    gateway = Gateway(config)
    result = await run_script(gateway, token(config, "dev"), f"python3 - <<'EOF'\n{FORKS}EOF\n")
    assert "limit hit" in result["stdout"] and "forked 64" not in result["stdout"], result


# Forks children that wait on a pipe until the parent is done, counting until a fork is refused.
FORKS = """
import os
r, w = os.pipe()
n = 0
try:
    for n in range(64):
        if os.fork() == 0:
            os.close(w); os.read(r, 1); os._exit(0)
    n = 64
except OSError:
    print("limit hit")
os.close(w)
print("forked", n)
"""
