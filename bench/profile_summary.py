"""Where a proxy's CPU goes: py-spy samples of its processes during the bench, summed by component.

    with Sampling(ProcCpu("gw-http"), Path("/tmp/prof/gw-http.txt")):   # py-spy record on each process
        ...  # the timed calls
    print(summary_text(summarise(Path("/tmp/prof/gw-http.txt"))))

py-spy samples the active threads only (no ``--idle``), so the share of samples is the share of CPU time. Each
sample goes to one component: the innermost frame that names one (COMPONENTS, first match from the inside out),
so the SDK client's frames under gateway/tools/upstream.py count as the upstream hop, the SQLite calls under
gateway/ledger as the ledger, and a frame of the event loop alone as scheduling.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import TracebackType

from proc_cpu import ProcCpu

# (component, substrings of a frame's file path), checked for each frame from the innermost one outwards
COMPONENTS: list[tuple[str, tuple[str, ...]]] = [
    ("decision log (masking, JSON, write)", ("gateway/decision_log.py",)),
    ("ledger (SQLite append, HMAC, head file)", ("gateway/ledger/",)),
    ("policy (input document, Rego, cache, worker round trip)", ("gateway/policy/",)),
    ("telemetry (spans, log lines)", ("gateway/telemetry.py", "structlog/", "opentelemetry/")),
    ("upstream hop (SDK client session, httpx)", ("gateway/tools/upstream.py", "mcp/client/", "httpx", "httpcore")),
    ("token check", ("gateway/identity/",)),
    ("gateway pipeline, the rest", ("gateway/",)),
    ("SDK server (dispatch, session, models)", ("mcp/server/", "mcp_types/", "pydantic")),
    ("HTTP server (uvicorn, starlette, h11)", ("uvicorn/", "starlette/", "h11/", "httptools/", "sse_starlette/")),
]
# only when no frame of the sample names one of the above: the plumbing every component runs on
FALLBACK: list[tuple[str, tuple[str, ...]]] = [
    ("SDK shared (JSON-RPC session, streams)", ("mcp/shared/", "mcp/")),
    ("event loop, anyio, threads", ("asyncio/", "anyio/", "threading.py", "selectors.py", "concurrent/")),
]
# innermost frames of a thread that waits: py-spy's non-blocking sampling sometimes takes one for a busy thread
WAITS = ("Condition.wait", "Queue.get", "Event.wait", "select (selectors", "AppendBuffer._run (")
OTHER = "other"
WAITING = "waiting (left out of the shares)"


class Sampling:
    """``py-spy record`` (folded stacks, non-blocking) on every process of a group while the block runs.

    py-spy costs CPU of its own while it samples: a profiled run's figures are not the bench's figures; only
    the shares it prints are."""

    def __init__(self, meter: ProcCpu, out: Path, rate: int = 200) -> None:
        self.meter = meter
        self.out = out
        self.rate = rate
        self.spies: list[tuple[subprocess.Popen[bytes], Path]] = []

    def __enter__(self) -> Sampling:
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(spy).exists():
            print("  --profile: py-spy is not installed (pip install py-spy); not sampling", file=sys.stderr)
            return self
        self.out.parent.mkdir(parents=True, exist_ok=True)
        for pid in self.meter.pids():
            part = self.out.with_suffix(f".{pid}.txt")
            argv = [spy, "record", "--pid", str(pid), "--format", "raw", "--rate", str(self.rate)]
            # non-blocking: a paused process looks busy to py-spy, so blocking mode counts idle threads as work
            argv += ["--nonblocking", "--output", str(part)]
            self.spies.append((subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), part))
        print(f"  sampling {self.meter.name} ({len(self.spies)} processes) with py-spy", file=sys.stderr)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for spy, _ in self.spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        lines: list[str] = []
        for spy, part in self.spies:
            spy.wait(60)
            if part.exists():
                lines += part.read_text().splitlines()
                part.unlink()
        if self.spies:
            self.out.write_text("\n".join(lines) + "\n")


def component(stack: list[str]) -> str:
    if any(stack[-1].startswith(wait) for wait in WAITS):
        return WAITING
    for table in (COMPONENTS, FALLBACK):
        for frame in reversed(stack):  # innermost first
            for name, needles in table:
                if any(needle in frame for needle in needles):
                    return name
    return OTHER


def summarise(folded: Path) -> Counter[str]:
    """Samples per component, from py-spy's raw output (``outer;...;inner count`` per line)."""
    counts: Counter[str] = Counter()
    for line in folded.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[component(stack.split(";"))] += int(count)
    return counts


def summary_text(counts: Counter[str]) -> str:
    waiting = counts.pop(WAITING, 0)
    total = sum(counts.values()) or 1
    rows = [f"  {share * 100 / total:5.1f} %  {name}" for name, share in counts.most_common()]
    return "\n".join([*rows, f"  ({total} samples; {waiting} more were of a thread waiting)"])
