"""What information-flow labels and budgets cost per call on the forward path, in one interleaved run.

Run by hand (it is not a test, and nothing asserts on its numbers):

    .venv/bin/python bench/bench_flow.py                  # 2,000 calls a side in 20 rounds
    .venv/bin/python bench/bench_flow.py --calls 5000 --json

Two gateways in this process on one scratch workspace (bench_gateway.workspace: the echo upstream over stdio and
HTTP, declared read-only, so tier 1), both with the embedded policy engine so every CPU second of a call is this
process's:

    with      the stacks as shipped, gateway.yaml giving the agent every budget (calls, tier2, tier3, egress
              bytes, wall time, a token bucket), so each call reads its session's labels, is charged in the
              store and has its usage settled there; the echo upstream is untrusted, so every result is
              labelled and stamped
    without   the same gateway with the flow and budget stages (ReadFlow, LabelResult, ChargeBudget,
              SettleBudget) taken out of its tools/call stack

Each round runs a burst of ``echoh__echo`` calls (the forward path: raw JSON-RPC to the HTTP echo server) on
each side, in alternating order, and adds the process CPU time (time.process_time: every thread) each burst
used. The ratio with/without is the overhead; the issue's bound is 1.05.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from bench_gateway import InProcess, http_echo, workspace

from gateway.config import GatewayConfig
from gateway.judge.budget import ChargeBudget, SettleBudget
from gateway.judge.flow import LabelResult, ReadFlow
from gateway.judge.pipeline import Pipeline

FLOW_AND_BUDGET_STAGES = (ReadFlow, LabelResult, ChargeBudget, SettleBudget)
BUDGETS = {
    "agent": {
        "calls": 10**9,
        "tier2": 10**9,
        "tier3": 10**9,
        "egress_bytes": 10**12,
        "wall_s": 10**9,
        "rate": {"per_s": 10**6, "burst": 10**6},
    }
}


def without_flow(stack: Pipeline) -> Pipeline:
    return Pipeline(
        [s for s in stack.stages if not isinstance(s, FLOW_AND_BUDGET_STAGES)],
        finish=[s for s in stack.finish if not isinstance(s, FLOW_AND_BUDGET_STAGES)],
    )


async def measure(config: GatewayConfig, bearer: str, calls: int, warmup: int, rounds: int) -> dict[str, Any]:
    from gateway.runtime import Gateway

    with_ = Gateway(config)
    without = Gateway(config)
    without.stacks.call = without_flow(without.stacks.call)
    cpu = {"with": 0.0, "without": 0.0}
    async with with_.running(), without.running():
        sides = {
            "with": await InProcess(with_, bearer, "echoh__echo", {"text": "hello"}, "w").__aenter__(),
            "without": await InProcess(without, bearer, "echoh__echo", {"text": "hello"}, "o").__aenter__(),
        }
        for call in sides.values():
            for _ in range(warmup):
                assert await call(), "a warm-up call failed"
        per_round = calls // rounds
        for number in range(rounds):
            order = ["with", "without"] if number % 2 == 0 else ["without", "with"]
            for side in order:
                began = time.process_time()
                for _ in range(per_round):
                    await sides[side]()
                cpu[side] += time.process_time() - began
            print(f"  round {number + 1}/{rounds} done", file=sys.stderr)
    n = per_round * rounds
    return {
        "calls_per_side": n,
        "cpu_ms_per_call_with": 1000 * cpu["with"] / n,
        "cpu_ms_per_call_without": 1000 * cpu["without"] / n,
        "ratio": cpu["with"] / cpu["without"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls a side (2000)")
    parser.add_argument("--warmup", type=int, default=50, help="calls a side before timing (50)")
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds (20)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    echo = http_echo()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-flow-") as base:
            config, bearer = workspace(Path(base), f"{echo.url}/mcp")
            assert config.source is not None
            raw = yaml.safe_load(config.source.read_text())
            raw["budgets"] = BUDGETS
            raw["policy"] = {**raw.get("policy", {}), "engine": "embedded"}
            config.source.write_text(yaml.safe_dump(raw))
            config = GatewayConfig.load(config.source)
            figures = anyio.run(measure, config, bearer, args.calls, args.warmup, args.rounds)
    finally:
        echo.stop()
    print(
        f"labels + budgets on the forward path (echoh__echo, in-process, {figures['calls_per_side']} calls a side): "
        f"{figures['cpu_ms_per_call_with']:.3f} ms CPU a call with, {figures['cpu_ms_per_call_without']:.3f} without, "
        f"ratio {figures['ratio']:.3f}"
    )
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
