"""Cold start of the commands a hook user pays for on every call: each run is a fresh process.

    .venv/bin/python bench/bench_startup.py              # 20 runs of each command
    .venv/bin/python bench/bench_startup.py --runs 50 --json

It makes a scratch git repository, runs `gateway init` on it, starts `gateway serve --http` on it, then
times, in interleaved rounds: `python -c pass` (the baseline), `gateway check` of a tier-1 fs_read and
`gateway hook claude-code` answering one PreToolUse event (Bash `ls`) on stdin, each twice: asking the running
gateway (gateway/fast.py) and deciding in-process (the same settings in a copy of gateway.yaml, which the
running gateway does not serve, so the command decides itself), and `gateway --help`. Wall time from the
parent's clock, CPU time (user + system) of the child from os.wait4. Then the HTTP hook: the same event
posted to the running gateway (`POST /hooks/claude-code`, one kept-alive connection), wall time per answer,
and the gateway's CPU per answer from /proc. Bytecode is written on a first untimed run (an installed
package has its .pyc files; PYTHONDONTWRITEBYTECODE is cleared for the children). Run by hand: no test
asserts on these numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_once(argv: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    start = time.perf_counter()
    # in the workspace, as Claude Code runs a hook: ``-m gateway`` imports from the working directory first,
    # so a bench started from another tree's checkout would time that tree
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    error = proc.stderr.read().decode()
    if proc.returncode not in (0, 3, 4):
        raise SystemExit(f"{' '.join(argv[:6])}... failed ({proc.returncode}): {error}")
    return wall, usage.ru_utime + usage.ru_stime


def workspace(base: Path, env: dict[str, str]) -> Path:
    repo = base / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    (repo / "README.md").write_text("# bench\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], check=True)
    subprocess.run([sys.executable, "-m", "gateway", "init", str(repo)], check=True, env=env, capture_output=True)
    return repo


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each command")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        repo = workspace(Path(tmp), env)
        alone = repo.parent / "alone.yaml"  # the same settings; a config the running gateway does not serve
        alone.write_text((repo / "gateway.yaml").read_text().replace("workspace: .", f"workspace: {repo}"))
        gateway = [sys.executable, "-m", "gateway", "--config", str(repo / "gateway.yaml")]
        in_process = [sys.executable, "-m", "gateway", "--config", str(alone)]
        event: dict[str, Any] = {"session_id": "bench", "hook_event_name": "PreToolUse", "tool_name": "Bash"}
        event |= {"tool_input": {"command": "ls"}, "cwd": str(repo)}
        check = ["check", "--role", "developer", "--tool", "fs_read", "--args", '{"path": "README.md"}']
        hook = ["hook", "claude-code", "--role", "developer"]
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], b""),
            "gateway check": ([*gateway, *check], b""),
            "gateway check, in-process": ([*in_process, *check], b""),
            "gateway hook claude-code": ([*gateway, *hook], json.dumps(event).encode()),
            "hook claude-code, in-process": ([*in_process, *hook], json.dumps(event).encode()),
            "gateway --help": ([*gateway, "--help"], b""),
        }
        with serving(gateway, env, repo) as (url, pid):
            for argv, stdin in commands.values():
                run_once(argv, stdin, env, repo)  # writes bytecode (and remembers the policy's check); not timed
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
            for round_ in range(args.runs):
                names = list(commands)
                for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                    times[name].append(run_once(*commands[name], env, repo))
                    print(".", end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)
            hooked = http_hook(url, pid, gateway, event, args.runs * 10, env, repo)
    base = statistics.median(w for w, _ in times["python -c pass"])
    figures = {}
    print(f"{'command':30} {'wall p50':>9} {'wall p90':>9} {'cpu p50':>8} {'cpu p90':>8} {'x python':>9}")
    for name, samples in times.items():
        wall, cpu = [w for w, _ in samples], [c for _, c in samples]
        row = {
            "wall_p50_ms": statistics.median(wall) * 1000,
            "wall_p90_ms": percentile(wall, 0.9) * 1000,
            "cpu_p50_ms": statistics.median(cpu) * 1000,
            "cpu_p90_ms": percentile(cpu, 0.9) * 1000,
            "ratio_to_python": statistics.median(wall) / base,
        }
        figures[name] = row
        print(
            f"{name:30} {row['wall_p50_ms']:8.0f}ms {row['wall_p90_ms']:8.0f}ms {row['cpu_p50_ms']:7.0f}ms "
            f"{row['cpu_p90_ms']:7.0f}ms {row['ratio_to_python']:8.1f}x"
        )
    for kind, row in hooked.items():
        print(
            f"{'HTTP hook, ' + kind:30} {row['wall_p50_ms']:7.1f}ms {row['wall_p90_ms']:7.1f}ms "
            f"{row['cpu_mean_ms']:6.1f}ms {'(mean)':>8} {row['wall_p50_ms'] / (base * 1000):8.2f}x"
        )
        figures[f"HTTP hook, {kind}"] = row
    if args.json:
        print(json.dumps({"runs": args.runs, "figures": figures}, indent=2))
    return 0


@contextmanager
def serving(gateway: list[str], env: dict[str, str], cwd: Path) -> Iterator[tuple[str, int]]:
    """`gateway serve --http` on a free port, until it answers /readyz; its URL and pid."""
    import httpx2

    from gateway.process import free_port

    port = free_port()
    server = subprocess.Popen([*gateway, "serve", "--http", f"127.0.0.1:{port}"], env=env, cwd=cwd,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx2.get(f"{url}/readyz", trust_env=False).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            time.sleep(0.1)
        yield url, server.pid
    finally:
        server.terminate()
        server.wait(timeout=30)


def http_hook(
    url: str, pid: int, gateway: list[str], event: dict[str, Any], calls: int, env: dict[str, str], cwd: Path
) -> dict[str, dict[str, float]]:
    """The event posted ``calls`` times to the running gateway's hook endpoint, once unchanged and once
    with a new command each time: wall per answer (p50, p90) and the server's CPU per answer (mean, from
    /proc/PID/stat)."""
    import httpx2

    issued = subprocess.run([*gateway, "token", "issue", "--role", "developer", "--agent", "bench", "--json"],
                            env=env, cwd=cwd, capture_output=True, text=True, check=True)  # fmt: skip
    bearer = json.loads(issued.stdout)["token"]
    figures = {}
    with httpx2.Client(trust_env=False, timeout=30) as client:
        headers = {"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"}
        # the same event again and again (the decision cache answers), then a new command each time
        for kind, command in (("same event", lambda i: "ls"), ("distinct events", lambda i: f"ls src/{i}")):
            bodies = [json.dumps({**event, "tool_input": {"command": command(i)}}) for i in range(calls + 10)]
            for body in bodies[:10]:  # warm: the decision workers, the first connection
                client.post(f"{url}/hooks/claude-code", content=body, headers=headers)
            cpu_before, walls = process_cpu_s(pid), []
            for body in bodies[10:]:
                start = time.perf_counter()
                answer = client.post(f"{url}/hooks/claude-code", content=body, headers=headers)
                walls.append(time.perf_counter() - start)
                assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "allow", answer.text
            figures[kind] = {
                "wall_p50_ms": statistics.median(walls) * 1000,
                "wall_p90_ms": percentile(walls, 0.9) * 1000,
                "cpu_mean_ms": (process_cpu_s(pid) - cpu_before) / calls * 1000,
                "calls": calls,
            }
    return figures


def process_cpu_s(pid: int) -> float:
    """utime + stime of a process, in seconds (/proc/PID/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    raise SystemExit(main())
