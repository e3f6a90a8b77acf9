"""Memory inside the sandbox is bounded: every tmpfs has a size, every process an address-space limit, every
command (where the machine gives the gateway a memory cgroup) one limit for all it holds, and its OOM score
puts it before the gateway. Real bubblewrap, real commands, a live gateway and real MCP clients.

Each bomb is itself bounded (2 GB at most) so that a limit that fails to hold fails the test, not the host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import add_role, http_client, http_gateway, inproc_client, ledger_rows, reconfigure, text_of, token
from test_merge_queue import call, started, submit, work

from gateway.config import SandboxConfig, UpstreamConfig
from gateway.decision_log import read_entries
from gateway.memory_cgroup import MemoryGroups
from gateway.runtime import Gateway
from gateway.sandbox import SMALL_TMPFS, Sandbox

pytestmark = pytest.mark.anyio

MB = 1024 * 1024
# one process that allocates until it is refused: RLIMIT_AS says no at sandbox.memory_mb
ALLOCATE = """python3 - <<'EOF'
held = []
try:
    for step in range(128):
        held.append(bytearray(b"x") * (16 << 20))
    print("ALLOCATED 2048 MB")
except MemoryError:
    print(f"refused after {len(held) * 16} MB")
    raise
EOF
"""
# /tmp and a scratch dir filled: each tmpfs says no at sandbox.tmpfs_mb
FILL = """head -c 200000000 /dev/zero > /tmp/fill; echo "tmp rc=$? $(wc -c < /tmp/fill)"
head -c 200000000 /dev/zero > "$HOME/.cache/fill"; echo "cache rc=$? $(wc -c < "$HOME/.cache/fill")"
"""
# eight processes of 100 MB each, each under RLIMIT_AS: only a memory cgroup sees them together. Each child
# says "ready" once it holds its memory and keeps it until the parent closes its stdin, which it does once
# every child is ready or dead: all of them held their memory at once, or the kernel killed some.
MANY = """python3 - <<'EOF'
import subprocess, sys
child = "import sys; held = bytearray(b'x') * (100 << 20); print('ready', flush=True); sys.stdin.read()"
pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
kids = [subprocess.Popen([sys.executable, "-c", child], **pipes) for _ in range(8)]
ready = sum(kid.stdout.readline() == b"ready\\n" for kid in kids)
for kid in kids:
    kid.stdin.close()
    kid.wait()
print(f"ready {ready} of 8")
EOF
"""


@pytest.fixture
def bounded(config: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    config = reconfigure(config, sandbox={"memory_mb": 256, "tmpfs_mb": 32})
    add_role(config, "dev", ["fs_*", "shell_run"], max_tier=2)
    return config


async def test_memory_bombs_are_refused_while_the_gateway_serves_another_client(bounded: Any) -> None:
    config = bounded
    grouped = Gateway(config).sandbox.groups is not None  # cgroup v1 as root, or a delegated v2 subtree
    scripts = {"allocate.sh": ALLOCATE, "fill.sh": FILL, "many.sh": MANY}
    results: dict[str, Any] = {}
    served: list[Any] = []
    with http_gateway(config.source) as url:
        async with (
            http_client(url, token(config, "dev", agent="bomber")) as bomber,
            http_client(url, token(config, "dev", agent="other")) as other,
        ):
            for name, script in scripts.items():
                assert not (await bomber.call_tool("fs_write", {"path": name, "content": script})).is_error

            async def bomb(name: str) -> None:
                results[name] = await bomber.call_tool("shell_run", {"command": f"sh {name}"})

            async def other_calls() -> None:
                for _ in range(5):
                    served.append(await other.call_tool("fs_read", {"path": "README.md"}))

            async with anyio.create_task_group() as tg:
                for name in scripts:
                    tg.start_soon(bomb, name)
                tg.start_soon(other_calls)
            # the gateway lives and goes on serving
            after = await other.call_tool("shell_run", {"command": "sh -c 'echo still here'"})
    assert all(not r.is_error and "# demo repo" in text_of(r) for r in served)
    assert not after.is_error and "still here" in after.structured_content["stdout"]

    allocated = results["allocate.sh"].structured_content
    assert allocated["exit_code"] == 1 and "refused after" in allocated["stdout"], allocated
    assert int(allocated["stdout"].split()[2]) < 256 and "ALLOCATED" not in allocated["stdout"]
    assert "256 MB of address space" in allocated["sandbox_limits"]

    filled = results["fill.sh"].structured_content
    assert f"tmp rc=1 {32 * MB}" in filled["stdout"] and f"cache rc=1 {32 * MB}" in filled["stdout"], filled
    assert "No space left on device" in filled["stderr"] and "32 MB of memory" in filled["sandbox_limits"]

    many = results["many.sh"]
    rows = ledger_rows(Gateway(config))
    if grouped:
        assert many.is_error and many.structured_content["error"]["code"] == "memory_limit", text_of(many)
        assert "ran out of the 256 MB of memory the sandbox gives all its processes" in text_of(many)
        assert "of 8" in text_of(many)  # the tail of its output, masked
        row = next(r for r in rows if r.tool == "shell_run" and r.outcome == "error")
        assert row.detail["error"]["code"] == "memory_limit"
    else:  # no cgroup here: each process stays under its own limit, so all eight ran (docs/sandbox.md)
        assert "ready 8 of 8" in many.structured_content["stdout"]
    assert [r.outcome for r in rows if r.tool == "shell_run"].count("ok") >= 3  # allocate, fill, after


async def test_without_a_memory_cgroup_each_process_is_bounded_not_their_sum(bounded: Any) -> None:
    config = reconfigure(bounded, sandbox={"memory_mb": 256, "tmpfs_mb": 32, "memory_cgroup": "off"})
    gateway = Gateway(config)
    assert gateway.sandbox.groups is None
    async with inproc_client(gateway, token(config, "dev")) as client:
        await client.call_tool("fs_write", {"path": "many.sh", "content": MANY})
        many = await client.call_tool("shell_run", {"command": "sh many.sh"})
    assert not many.is_error and "ready 8 of 8" in many.structured_content["stdout"]  # 800 MB: docs/sandbox.md
    assert read_entries(config.decision_log_path)[-1]["input"]["context"]["sandbox"]["limits"]["memory_cgroup"] is False


async def test_each_command_sees_its_limits_and_its_oom_score(
    bounded: Any,
) -> None:
    config = bounded
    gateway = Gateway(config)
    script = "ulimit -v; cat /proc/self/oom_score_adj; df -k /tmp /run | tail -n 2 | awk '{print $2}'\n"
    async with inproc_client(gateway, token(config, "dev")) as client:
        await client.call_tool("fs_write", {"path": "limits.sh", "content": script})
        result = (await client.call_tool("shell_run", {"command": "sh limits.sh"})).structured_content
    address_space, oom_score, tmp_kb, run_kb = result["stdout"].split()
    assert int(address_space) == 256 * 1024 and oom_score == "1000"
    assert int(tmp_kb) == 32 * 1024 and int(run_kb) == SMALL_TMPFS // 1024
    limits = read_entries(config.decision_log_path)[-1]["input"]["context"]["sandbox"]["limits"]
    assert limits["memory_mb"] == 256 and limits["tmpfs_mb"] == 32
    assert limits["memory_cgroup"] is (gateway.sandbox.groups is not None)


def test_every_tmpfs_the_sandbox_mounts_has_a_size(tmp_path: Path) -> None:
    scratch, hidden, writable = tmp_path / "cache", tmp_path / "state", tmp_path / "state" / "worktree"
    for path in (scratch, writable, tmp_path / "secret"):
        path.mkdir(parents=True)
    sandbox = Sandbox(SandboxConfig(scratch=[str(scratch)], hide=[str(tmp_path / "secret")]), hidden=[hidden])
    argv = sandbox._bwrap(sandbox.confine(writable=[writable], cwd=writable))
    mounts = [i for i, arg in enumerate(argv) if arg == "--tmpfs"]
    assert len(mounts) >= 5  # /tmp, /run, the scratch dir, the hidden dir around the worktree, the other one
    assert all(argv[i - 2] == "--size" and int(argv[i - 1]) > 0 for i in mounts)


async def test_a_required_memory_cgroup_that_is_not_there_runs_nothing(config: Any, repo: Path) -> None:
    config = reconfigure(config, sandbox={"memory_cgroup": "required", "cgroup_parent": str(repo)})
    add_role(config, "dev", ["fs_*", "shell_run"], max_tier=2)
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "dev")) as client:
        result = await client.call_tool("shell_run", {"command": "touch ran.txt"})
    assert result.is_error and result.structured_content["error"]["code"] == "sandbox_unavailable"
    assert "memory_cgroup is 'required'" in text_of(result) and not (repo / "ran.txt").exists()
    assert ledger_rows(gateway)[-1].detail["error"]["code"] == "sandbox_unavailable"


async def test_verification_commands_and_upstream_servers_have_limits_of_their_own(config: Any) -> None:
    config = reconfigure(config, sandbox={"memory_mb": 1000, "verify_memory_mb": 3000, "upstream_memory_mb": 2000})
    check = f"test -f src/done.py && test $(ulimit -v) -eq {3000 * 1024}"  # red on the base, green after work
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], [check])
        await work(gateway, "T1", {"src/done.py": "DONE = True\n"})
        result = await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T1"})
        assert result.structured_content["passed"], text_of(result)
        server = gateway.upstream_confinement(UpstreamConfig(command="/bin/true"))
    assert server is not None and server.limits["memory_mb"] == 2000 and "cpu_s" not in server.limits
    assert server.limits["memory_cgroup"] is False  # a long-lived server: RLIMIT_AS and tmpfs sizes only


def test_groups_a_killed_gateway_left_are_removed_at_the_next_start() -> None:
    groups = MemoryGroups.find()
    if groups is None:
        pytest.skip("this machine gives this process no memory cgroup (cgroup v2 undelegated, v1 not as root)")
    dead = 4_194_304  # PID_MAX_LIMIT: pids are below it, so no process has this one
    left = groups.parent / f"gateway-{dead}-1"
    left.mkdir()
    assert (left / "cgroup.procs").exists()
    assert MemoryGroups.find() == groups and not left.exists()
