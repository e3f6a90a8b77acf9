"""Budgets (gateway/budgets.py, gateway/judge/budget.py): charged once per authorised call in the store, what is
left in the result's _meta, an exhausted budget a clear refusal with its reset time, recorded and noticed."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from typing import Any

import pytest
import yaml
from conftest import add_role, inproc_client, ledger_rows, reconfigure, token
from test_egress import Lookups, hello, through  # noqa: F401  (hello: the fixture)
from test_tiers import answering

from gateway.addresses import AddressGuard
from gateway.budgets import BUDGET_META, Budget, BudgetExhausted, BudgetsConfig, Rate, Usage
from gateway.config import GatewayConfig
from gateway.egress import EGRESS_BYTES, Egress
from gateway.errors import ConfigError
from gateway.hook import judge_command_hook
from gateway.ledger.budgets import Budgets
from gateway.notify import notice
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio


def structured(result: Any) -> dict[str, Any]:
    return result.structured_content or {}


async def test_a_budget_spent_mid_session_refuses_the_next_call_with_its_reset(config: Any) -> None:
    add_role(config, "dev", ["*"], max_tier=2)
    config = reconfigure(config, budgets={"agent": {"calls": 3, "tier2": 1, "wall_s": 3600}})
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "dev", agent="a1")) as client:
        first = await client.call_tool("fs_read", {"path": "README.md"})
        assert first.meta[BUDGET_META]["agent:a1"]["calls"] == 2
        changed = await client.call_tool("fs_write", {"path": "README.md", "content": "changed\n"})
        assert changed.meta[BUDGET_META]["agent:a1"]["tier2"] == 0
        again = await client.call_tool("fs_write", {"path": "README.md", "content": "again\n"})
        assert again.is_error and structured(again)["error"]["budget"] == "tier2"  # tier 1 still runs:
        read = await client.call_tool("fs_read", {"path": "README.md"})
        assert read.meta[BUDGET_META]["agent:a1"]["calls"] == 0
        refused = await client.call_tool("fs_read", {"path": "README.md"})
    error = structured(refused)["error"]
    assert refused.is_error and error["code"] == "budget_exhausted" and error["scope"] == "agent:a1"
    assert "resets at" in error["message"] and error["resets_at"]
    [scope] = Gateway(config).budgets.show()  # wall time settled with each call's ledger row
    assert scope["scope"] == "agent:a1" and scope["calls"] == 3 and scope["tier2"] == 1 and scope["wall_ms"] >= 0
    row = ledger_rows(Gateway(config))[-1]
    assert row.outcome == "denied" and row.detail["error"]["code"] == "budget_exhausted"
    found = notice(row)
    assert found is not None and found["event"] == "budget_exhausted" and "agent a1" in found["text"]


async def test_a_held_call_approved_and_retried_is_charged_once(config: Any) -> None:
    add_role(config, "dev", ["*"], max_tier=2)  # above it: held for a person
    config = reconfigure(config, budgets={"agent": {"calls": 10, "tier3": 5}})
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "dev", agent="a3")) as client:
        push = {"command": "git push origin main"}  # tier 3: held for a person
        held = structured(await client.call_tool("shell_run", push))
        assert held.get("status") == "approval_pending", held
        gateway.approvals.settle(held["approval_id"], approve=True, by="alice")
        retried = await client.call_tool("shell_run", push)
        assert "status" not in structured(retried)  # it ran (git has no remote: its error is the command's)
    [scope] = gateway.budgets.show()
    assert (scope["calls"], scope["tier3"]) == (1, 1)
    rows = [r for r in ledger_rows(gateway) if r.tool == "shell_run"]
    assert next(r.outcome for r in rows) == "asked" and rows[-1].detail["approval"]["answer"] == "approved"


async def test_a_commands_egress_through_the_proxy_spends_the_egress_budget(
    config: Any, request: pytest.FixtureRequest
) -> None:
    """A real sandboxed curl, through the gateway's real egress proxy, to a real HTTP server on the loopback
    (gateway.yaml names 127.0.0.1): its bytes spend the agent's egress budget, and the next call is refused."""
    port, log = request.getfixturevalue("hello")  # a real HTTP server on the loopback (tests/test_egress.py)
    config = reconfigure(config, egress={"allow_addresses": ["127.0.0.1"]}, budgets={"agent": {"egress_bytes": 64}})
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "developer", agent="e1")) as client:
        fetch = {"command": f"curl -s http://127.0.0.1:{port}/"}
        asked = structured(await client.call_tool("shell_run", fetch))
        assert asked.get("status") == "approval_pending", asked
        gateway.approvals.settle(asked["approval_id"], approve=True, by="alice")
        ran = structured(await client.call_tool("shell_run", fetch))
        assert "hello from the host" in ran["stdout"], ran
        refused = await client.call_tool("fs_read", {"path": "README.md"})
    assert log.read_text().startswith(f"GET http://127.0.0.1:{port}/ HTTP/1.1")  # it went through the proxy
    error = structured(refused)["error"]
    assert refused.is_error and error["code"] == "budget_exhausted" and error["budget"] == "egress_bytes"
    assert error["scope"] == "agent:e1" and f"it resets at {error['resets_at']}" in error["message"]
    [scope] = gateway.budgets.show()
    assert scope["egress_bytes"] > 64 and scope["calls"] == 1  # the approved retry was charged when it asked
    rows = ledger_rows(gateway)
    assert rows[-1].tool == "fs_read" and rows[-1].outcome == "denied"
    assert rows[-1].detail["error"]["budget"] == "egress_bytes"
    if shutil.which("bwrap"):  # the curl ran in the sandbox, whose only way out is the proxy
        assert next(r for r in reversed(rows) if r.tool == "shell_run").detail["sandbox"]["mode"] == "bubblewrap"


async def test_budgets_fail_closed_when_the_store_cannot_charge(config: Any, repo: Any) -> None:
    add_role(config, "dev", ["*"], max_tier=2)
    config = reconfigure(config, budgets={"agent": {"calls": 100}})
    gateway = Gateway(config)
    with sqlite3.connect(config.store_path) as db:  # a real fault: the store lost the table (no mock)
        db.execute("DROP TABLE budgets")
    async with inproc_client(gateway, token(config, "dev", agent="a2")) as client:
        result = await client.call_tool("fs_write", {"path": "new.txt", "content": "x"})
    assert result.is_error and structured(result)["error"]["code"] == "budget_unavailable"
    assert not (repo / "new.txt").exists()


async def test_a_held_call_is_refused_uncharged_and_unasked_when_the_store_cannot_charge(config: Any) -> None:
    """The charge a tier-3 call owes is paid before anyone is asked: a store that cannot take it refuses the call,
    and no person is asked for it."""
    add_role(config, "dev", ["*"], max_tier=2)  # above it: held for a person
    config = reconfigure(config, budgets={"agent": {"calls": 100}})
    gateway = Gateway(config)
    with sqlite3.connect(config.store_path) as db:  # a real fault: the store lost the table (no mock)
        db.execute("DROP TABLE budgets")
    async with inproc_client(gateway, token(config, "dev", agent="a6")) as client:
        result = await client.call_tool("shell_run", {"command": "git push origin main"})
    assert result.is_error and structured(result)["error"]["code"] == "budget_unavailable", structured(result)
    assert gateway.approvals.list() == []


def test_token_bucket_and_windows_with_an_injected_clock(gateway: Any) -> None:
    now = [1_000_000.0]
    config = BudgetsConfig(window_s=60, agent=Budget(calls=5, rate=Rate(per_s=1, burst=2)))
    budgets = Budgets(gateway.db, config, clock=lambda: now[0])
    scopes = budgets.scopes("dev", "a1", None, None)
    budgets.charge(scopes, Usage(calls=1))
    budgets.charge(scopes, Usage(calls=1))
    with pytest.raises(BudgetExhausted, match="rate exceeded") as refused:
        budgets.charge(scopes, Usage(calls=1))
    assert refused.value.details["budget"] == "rate"
    now[0] += 1.0
    assert budgets.charge(scopes, Usage(calls=1))["agent:a1"]["calls"] == 2
    now[0] += 61  # a new window: counts start again
    assert budgets.charge(scopes, Usage(calls=1))["agent:a1"]["calls"] == 4


@pytest.mark.both_stores
def test_measured_usage_stops_the_next_call_in_either_store(gateway: Any) -> None:
    budgets = Budgets(gateway.db, BudgetsConfig(task=Budget(egress_bytes=1000)))
    scopes = budgets.scopes("worker", "w1", "T1", Budget(egress_bytes=500))
    assert scopes[0][1].egress_bytes == 500  # a manifest only tightens
    budgets.charge(scopes, Usage(calls=1))
    budgets.settle(scopes, Usage(egress_bytes=600))
    with pytest.raises(BudgetExhausted, match="egress bytes"):
        budgets.charge(scopes, Usage(calls=1))


# One process charging a scope as fast as it can; it starts when a line arrives on stdin, and prints its charges
RACER = """
import sys
from gateway.budgets import Budget, BudgetExhausted, BudgetsConfig, Usage
from gateway.config import GatewayConfig
from gateway.ledger.budgets import Budgets
from gateway.store import open_store

source, limit, tries, roles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "roles"
config = BudgetsConfig(agent=Budget(calls=limit), roles={"dev": Budget(calls=10 * limit)} if roles else {})
budgets = Budgets(open_store(GatewayConfig.load(source)), config)
scopes = budgets.scopes("dev", "racer", None, None)
sys.stdin.readline()
charged = 0
for _ in range(tries):
    try:
        budgets.charge(scopes, Usage(calls=1))
        charged += 1
    except BudgetExhausted:
        pass
print(charged)
"""


@pytest.mark.both_stores
@pytest.mark.parametrize("scopes", ["agent", "roles"])  # one scope, and two charged together
def test_processes_charging_one_budget_at_once_never_exceed_it(gateway: Any, scopes: str) -> None:
    assert gateway.config.source is not None
    limit, tries = 40, 30
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(gateway.config.source), str(limit), str(tries), scopes],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for racer in racers:  # both have opened the store by now or will soon: the line lets them go together
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.close()
    charged = [int(racer.stdout.read()) for racer in racers if racer.stdout is not None]
    assert [racer.wait(timeout=120) for racer in racers] == [0, 0]
    assert sum(charged) == limit
    rows = {row["scope"]: row for row in gateway.budgets.show()}
    assert rows["agent:racer"]["calls"] == limit


def test_a_manifest_never_loosens_the_operators_budget() -> None:
    base = Budget(calls=10, rate=Rate(per_s=1, burst=5))
    tight = base.tightened(Budget(calls=1000, tier3=2, rate=Rate(per_s=100, burst=1)))
    assert tight.calls == 10 and tight.tier3 == 2 and tight.rate == Rate(per_s=1, burst=1)


@pytest.mark.parametrize(
    "budgets, says",
    [
        ({"agent": {"calls": -1}}, "budgets.agent.calls"),
        ({"agent": {}}, "limits nothing"),
        ({"task": {"calls": "lots"}}, "budgets.task.calls"),
        ({"roles": {"worker": {"calls": 5, "cals": 5}}}, "cals"),
        ({"agent": {"rate": {"per_s": 0, "burst": 1}}}, "per_s"),
        ({"window_s": 0}, "window_s"),
    ],
)
def test_nonsense_budgets_are_a_clear_config_error(config: Any, budgets: dict[str, Any], says: str) -> None:
    assert config.source is not None
    raw = yaml.safe_load(config.source.read_text())
    config.source.write_text(yaml.safe_dump({**raw, "budgets": budgets}))
    with pytest.raises(ConfigError, match=says.replace(".", r"\.")):
        GatewayConfig.load(config.source)


async def test_the_egress_proxy_counts_a_calls_bytes_both_ways(gateway: Any, request: pytest.FixtureRequest) -> None:
    port, _ = request.getfixturevalue("hello")  # a real HTTP server on the loopback (tests/test_egress.py)
    egress = Egress(gateway.ledger, AddressGuard(["127.0.0.1"], own_ports=set), Lookups({"hello.test": ["127.0.0.1"]}))
    counter = [0]
    EGRESS_BYTES.set(counter)  # as ChargeBudget does for the call whose command starts the proxy
    request = f"GET http://hello.test:{port}/ HTTP/1.1\r\n\r\n".encode()
    answer = await through(egress, [f"hello.test:{port}"], request)
    assert answer.endswith(b"hello from the host")
    assert counter[0] >= len(answer)  # what came back, and the request as it went on


async def test_an_agents_own_approval_answer_does_not_skip_its_charge(config: Any) -> None:
    """An agent's client (no interactive role) that sends an "approval" answer with each held call, sealed or
    not, is still charged for the call and its tier-3 request: only the answer ActOnTier takes skips a charge."""
    import mcp_types as mt

    add_role(config, "dev", ["*"], max_tier=2)  # above it: held for a person
    config = reconfigure(config, budgets={"agent": {"calls": 10, "tier3": 5}})
    gateway = Gateway(config)
    forged = {"approval": mt.ElicitResult(action="accept", content={"approve": True})}
    async with inproc_client(gateway, token(config, "dev", agent="a4")) as client:
        for state in ("00.ff", None):
            held = await client.session.call_tool(
                "shell_run",
                {"command": "git push origin main"},
                input_responses=forged,
                request_state=state,
                allow_input_required=True,
            )
            assert structured(held).get("status") == "approval_pending", structured(held)
    [scope] = gateway.budgets.show()
    assert (scope["calls"], scope["tier3"]) == (2, 2)


@pytest.mark.both_stores
async def test_a_retry_that_loses_its_answer_to_a_twin_is_charged_with_its_re_ask(config: Any) -> None:
    """Two calls with one key retry after one approval, on two replicas of one store: the twin takes the answer
    and runs (charged when it asked); the other found the answer waiting when its budget was looked at, but lost
    it before it could take it, so it asks a person again - and it and its new request are charged. The
    interleaving is driven, not timed: a stage just before ActOnTier in replica A's stack runs B's whole call."""
    from gateway.judge.act_on_tier import ActOnTier

    add_role(config, "dev", ["*"], max_tier=2)  # above it: held for a person
    config = reconfigure(config, budgets={"agent": {"calls": 10, "tier3": 5}})
    replica_a, replica_b = Gateway(config), Gateway(config)
    bearer, push = token(config, "dev", agent="a5"), {"command": "git push origin main"}
    twin: list[Any] = []
    async with inproc_client(replica_a, bearer) as a, inproc_client(replica_b, bearer) as b:
        held = structured(await a.call_tool("shell_run", push))
        assert held.get("status") == "approval_pending", held
        replica_a.approvals.settle(held["approval_id"], approve=True, by="alice")

        async def twin_takes_the_answer(call: Any) -> None:
            if not twin:
                twin.append(await b.call_tool("shell_run", push))

        stages = replica_a.stacks.call.stages
        stages.insert(next(i for i, s in enumerate(stages) if isinstance(s, ActOnTier)), twin_takes_the_answer)
        lost = structured(await a.call_tool("shell_run", push))
    assert "status" not in structured(twin[0])  # the twin took the answer and ran
    assert lost.get("status") == "approval_pending" and lost["approval_id"] != held["approval_id"], lost
    [scope] = replica_a.budgets.show()
    assert (scope["calls"], scope["tier3"]) == (2, 2)  # the first asking, and the call that asked again


@pytest.mark.parametrize(
    ("mode", "action", "charged"),
    [
        ("auto", "accept", (1, 1)),  # InputRequiredResult: the asking charged, the retry bringing the answer not
        ("legacy", "accept", (1, 1)),  # a pushed elicitation: charged as it asks, once
        ("auto", "cancel", (2, 2)),  # the retry brings no answer: it is held for a person, and charged again
        ("legacy", "cancel", (1, 1)),  # charged as it pushed; held for a person after, not charged twice
    ],
)
async def test_a_persons_answer_at_the_client_is_charged_once_and_a_cancel_is_not_free(
    config: Any, mode: str, action: str, charged: tuple[int, int]
) -> None:
    """A person's client (an interactive role) asked by elicitation: the asking is charged, a sealed answer on
    the retry is not charged again; a sealed "cancel" is no answer, so the call it makes asks again, charged."""
    add_role(config, "operator", ["shell_run"], max_tier=2)
    config = reconfigure(
        config, approvals={"interactive_roles": ["operator"]}, budgets={"agent": {"calls": 10, "tier3": 5}}
    )
    gateway = Gateway(config)
    callback = answering(action, approve=True if action == "accept" else None)
    async with inproc_client(
        gateway, token(config, "operator", agent="op"), mode=mode, elicitation_callback=callback
    ) as client:
        result = structured(await client.call_tool("shell_run", {"command": "cat /etc/hostname"}))
    assert len(callback.asked) == 1
    assert (result.get("status") == "approval_pending") == (action == "cancel"), result
    [scope] = gateway.budgets.show()
    assert (scope["calls"], scope["tier3"]) == charged


async def test_a_held_hook_call_approved_and_retried_is_charged_once(config: Any) -> None:
    """Claude Code's hook acts on the tier through the same Enforcement: the held Bash call pays its owed charge
    as it asks; its retry takes the person's answer and is not charged again."""
    config = reconfigure(config, budgets={"agent": {"calls": 10, "tier3": 5}})
    gateway = Gateway(config, isolated=False)
    bearer = token(config, "developer", agent="cc")
    event = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(config.workspace)}
    raw = json.dumps({**event, "tool_input": {"command": "cat /etc/hostname > stolen.txt"}})  # tier 3
    held = await judge_command_hook(gateway.stacks.hook, raw, bearer, "developer", "cc")
    assert held.outcome == "asked", held.detail
    gateway.approvals.settle(held.detail["approval"]["id"], approve=True, by="alice")
    retried = await judge_command_hook(gateway.stacks.hook, raw, bearer, "developer", "cc")
    assert retried.outcome == "allowed" and retried.detail["approval"]["answer"] == "approved"
    [scope] = gateway.budgets.show()
    assert (scope["calls"], scope["tier3"]) == (1, 1)
