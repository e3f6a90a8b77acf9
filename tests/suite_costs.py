"""Where the suite's time goes, from a run with ``GATEWAY_TEST_COSTS`` set (tests/conftest.py writes a JSON line
per test: its wall and the CPU of the test process and the processes it started and reaped), and the file order
the workers take (tests/suite_costs.json, heaviest first).

    GATEWAY_TEST_COSTS=/tmp/costs.jsonl pytest -n 2 --dist loadfile
    python tests/suite_costs.py /tmp/costs.jsonl            # per-file table, per-worker spans, total
    python tests/suite_costs.py /tmp/costs.jsonl --write    # and store the costs the order is made from

CPU is what a loaded machine does not inflate (other jobs sharing the cores stretch wall, not CPU); a file's
cost for the order is its CPU, or its wall when it mostly waits (on a timeout, a sleeping upstream).
"""

from __future__ import annotations

import argparse
import heapq
import json
from collections import defaultdict
from pathlib import Path

COSTS = Path(__file__).with_name("suite_costs.json")


def per_file(rows: list[dict[str, float | str]]) -> dict[str, dict[str, float]]:
    files: dict[str, dict[str, float]] = defaultdict(lambda: {"wall": 0.0, "cpu": 0.0, "tests": 0})
    for row in rows:
        totals = files[str(row["test"]).split("::")[0]]
        totals["wall"] += float(row["wall"])
        totals["cpu"] += float(row["cpu"])
        totals["tests"] += 1
    return files


def makespan(costs: list[float], workers: int = 2) -> float:
    """When the last worker finishes if each takes the next file in order as it runs out (xdist's loadfile)."""
    finish = [0.0] * workers
    for cost in costs:
        heapq.heapreplace(finish, finish[0] + cost)
    return max(finish)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path, help="the JSON lines a run with GATEWAY_TEST_COSTS wrote")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--write", action="store_true", help=f"store each file's cost in {COSTS.name}")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    files = per_file(rows)
    ranked = sorted(files.items(), key=lambda kv: -kv[1]["cpu"])
    print(f"{'file':48} {'wall s':>8} {'cpu s':>8} {'tests':>6}")
    for name, totals in ranked[: args.top]:
        print(f"{name:48} {totals['wall']:8.1f} {totals['cpu']:8.1f} {int(totals['tests']):6}")
    spans: dict[str, list[float]] = defaultdict(lambda: [float("inf"), 0.0, 0.0])
    for row in rows:
        span = spans[str(row["worker"])]
        span[0] = min(span[0], float(row["start"]))
        span[1] = max(span[1], float(row["start"]) + float(row["wall"]))
        span[2] += float(row["cpu"])
    for worker, (start, end, cpu) in sorted(spans.items()):
        print(f"worker {worker}: {end - start:.0f} s wall from its first test to its last, {cpu:.0f} s CPU")
    cpu = sorted((totals["cpu"] for totals in files.values()), reverse=True)
    by_count = [t["cpu"] for t in sorted(files.values(), key=lambda t: -t["tests"])]  # xdist's own order
    print(f"{len(rows)} tests, {sum(cpu):.0f} s CPU; on two idle cores about {makespan(cpu):.0f} s with the")
    print(f"heaviest file first, {makespan(by_count):.0f} s in xdist's own order (most tests first)")
    if args.write:
        load = sum(t["wall"] for t in files.values()) / max(sum(cpu), 1e-9)  # how much sharing stretched wall
        costs = {name: round(max(t["cpu"], t["wall"] / load), 1) for name, t in ranked}
        COSTS.write_text(json.dumps(dict(sorted(costs.items(), key=lambda kv: -kv[1])), indent=1) + "\n")


if __name__ == "__main__":
    main()
