"""What information-flow labels and budgets cost per call on the forward path, in one interleaved run.

Run by hand (it is not a test, and nothing asserts on its numbers):

    .venv/bin/python bench/bench_flow.py                  # over HTTP: 2,000 calls a side in 20 rounds
    .venv/bin/python bench/bench_flow.py --inprocess      # the pipeline alone, no transport
    .venv/bin/python bench/bench_flow.py --calls 5000 --json

Two gateways on one scratch workspace (bench_gateway.workspace: the echo upstream over HTTP, declared read-only,
so tier 1), as the forward benches run them: `gateway serve --http` each, timed with SDK clients in interleaved
rounds (bench_gateway.run_interleaved), the CPU per call read from /proc for each server's processes (its
decision workers too; not the echo server). With --inprocess, two Gateways in this process instead, their
pipelines called directly, the CPU from time.process_time:

    with      the stacks as shipped, gateway.yaml giving the agent every budget (calls, tier2, tier3, egress
              bytes, wall time, a token bucket), so each call reads its session's labels, is charged in the
              store and has its usage settled there; the echo upstream is untrusted, so every result is
              labelled and stamped
    without   the same gateway with the flow and budget stages (ReadFlow, LabelResult, ChargeBudget,
              SettleBudget) taken out of its tools/call stack

Each round runs a burst of ``echoh__echo`` calls (the forward path: raw JSON-RPC to the HTTP echo server) on
each side, in alternating order. The ratio of CPU per call with/without is the overhead; the issue's bound is
1.05. The "without" server is this tree's gateway started by this file (``--serve-without-flow``) with the four
stages left out of its stacks: the same code otherwise.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from bench_gateway import (
    HttpClient,
    HttpServer,
    InProcess,
    McpSession,
    Target,
    gateway_command,
    http_echo,
    run_interleaved,
    workspace,
)

from gateway.budgets import BUDGET_META
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


def serve_without_flow(argv: list[str]) -> int:
    """``gateway ARGV`` with the flow and budget stages left out of every stack it builds (the "without" side)."""
    from gateway.cli import main as gateway_main
    from gateway.judge import stacks

    built = stacks.Stacks.__init__

    def without(self: stacks.Stacks, services: Any) -> None:
        built(self, services)
        self.call = without_flow(self.call)
        self.read = without_flow(self.read)

    stacks.Stacks.__init__ = without  # type: ignore[method-assign]
    return gateway_main(argv)


async def measure_http(config: GatewayConfig, bearer: str, args: argparse.Namespace) -> dict[str, Any]:
    """Both servers over HTTP, their processes' CPU per call (bench_gateway's interleaved rounds)."""
    log = config.state / "bench-flow-%s.log"
    served = lambda port: gateway_command(config, "--http", f"127.0.0.1:{port}")  # noqa: E731
    with_ = HttpServer("the gateway", served, "flow-with", "/healthz", Path(str(log) % "w"))
    bare = lambda port: [  # noqa: E731
        *(sys.executable, __file__, "--serve-without-flow", "--config", str(config.source)),
        *("serve", "--http", f"127.0.0.1:{port}", "--log-level", "warning"),
    ]
    without = HttpServer("the gateway without flow stages", bare, "flow-without", "/healthz", Path(str(log) % "o"))
    text = {"text": "hello"}
    for server, charged in ((with_, True), (without, False)):  # the two sides are what they say they are
        async with HttpClient(server.url, bearer) as client:
            meta = (await client.call_tool("echoh__echo", text)).meta or {}
            assert (BUDGET_META in meta) == charged, f"{server.url}: _meta {meta}"
    targets = [
        Target(
            key,
            name,
            [McpSession(lambda s=server: HttpClient(s.url, bearer), "echoh__echo", text) for _ in range(args.clients)],
            meter=server.meter,
        )
        for key, name, server in (("with", "with labels and budgets", with_), ("without", "without", without))
    ]
    try:
        await run_interleaved(targets, args.calls, args.warmup, args.rounds)
    finally:
        with_.stop()
        without.stop()
    cpu = {t.key: t.result.cpu_ms_per_call for t in targets if t.result is not None}
    assert cpu["with"] is not None and cpu["without"] is not None
    return {
        "calls_per_side": args.calls * args.clients,
        "cpu_ms_per_call_with": cpu["with"],
        "cpu_ms_per_call_without": cpu["without"],
        "ratio": cpu["with"] / cpu["without"],
        "p50_ms_with": targets[0].result.p50_ms if targets[0].result else None,
        "p50_ms_without": targets[1].result.p50_ms if targets[1].result else None,
    }


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
        # Both gateways share this process's collector, whose allocation counter is one for both: whichever side
        # peaks higher within a call crossed the threshold first and paid every collection (measured: 99 of 99
        # in a run, all on "with", 46 us a call). Served apart (the HTTP mode) each pays its own. This path
        # makes no cycles (measured: nothing for the collector to free), so collections are left out of both.
        gc.collect()
        gc.disable()
        for number in range(rounds):
            order = ["with", "without"] if number % 2 == 0 else ["without", "with"]
            for side in order:
                began = time.process_time()
                for _ in range(per_round):
                    await sides[side]()
                cpu[side] += time.process_time() - began
            print(f"  round {number + 1}/{rounds} done", file=sys.stderr)
        gc.enable()
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
    parser.add_argument("--clients", type=int, default=2, help="HTTP: clients a side, calling at once (2)")
    parser.add_argument("--inprocess", action="store_true", help="the pipelines in this process, no transport")
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
            if args.inprocess:
                figures = anyio.run(measure, config, bearer, args.calls, args.warmup, args.rounds)
            else:
                figures = anyio.run(measure_http, config, bearer, args)
    finally:
        echo.stop()
    where = "in-process" if args.inprocess else "HTTP"
    print(
        f"labels + budgets on the forward path (echoh__echo, {where}, {figures['calls_per_side']} calls a side): "
        f"{figures['cpu_ms_per_call_with']:.3f} ms CPU a call with, {figures['cpu_ms_per_call_without']:.3f} without, "
        f"ratio {figures['ratio']:.3f}"
    )
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-without-flow"]:
        raise SystemExit(serve_without_flow(sys.argv[2:]))
    raise SystemExit(main())
