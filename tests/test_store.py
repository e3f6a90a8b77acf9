"""The store's bad input, on both stores: a schema newer than the gateway, an older one (db upgrade), an
unreachable database at start, a database lost mid-call; a password never shown."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import inproc_client, ledger_rows, reconfigure, text_of, token
from pg import PASSWORD_VAR, PostgresServer
from test_cli import gateway as run_gateway
from test_cli import one_error_line

from gateway.config import GatewayConfig
from gateway.errors import ConfigError, StoreUnavailable
from gateway.process import free_port
from gateway.runtime import Gateway
from gateway.store import SCHEMA_VERSION, store_for
from gateway.store.postgres import PostgresStore, mask_url, translate

PASSWORD_REF = "${" + PASSWORD_VAR + "}"  # gateway.yaml names the variable; the environment holds the password


def set_version(config: GatewayConfig, version: int) -> None:
    """What a newer gateway's migration leaves behind, as far as the version goes."""
    if config.store is None:
        with sqlite3.connect(config.store_path) as conn:
            conn.execute(f"PRAGMA user_version={version}")
        return
    with store_for(config).transaction() as tx:
        tx.execute("UPDATE schema_version SET version = ?", (version,))


@pytest.mark.both_stores
def test_db_status_and_upgrade_name_the_versions(config: GatewayConfig) -> None:
    status = run_gateway(config, "db", "status", "--json")
    assert status.returncode == 0, status.stderr
    fields = json.loads(status.stdout)
    assert fields["schema_version"] == fields["gateway_schema_version"] == SCHEMA_VERSION
    assert fields["state"] == "current"
    upgraded = run_gateway(config, "db", "upgrade")
    assert upgraded.returncode == 0 and json.loads(upgraded.stdout)["from"] == SCHEMA_VERSION


@pytest.mark.both_stores
def test_a_schema_newer_than_the_gateway_is_refused_naming_both_versions(config: GatewayConfig) -> None:
    set_version(config, SCHEMA_VERSION + 1)
    for argv in (("serve", "--http", f"127.0.0.1:{free_port()}"), ("db", "upgrade"), ("ledger", "verify")):
        line = one_error_line(run_gateway(config, *argv))
        assert f"schema version {SCHEMA_VERSION + 1}, newer than this gateway knows ({SCHEMA_VERSION})" in line
    assert run_gateway(config, "db", "status").returncode == 1


def test_postgresql_waits_for_db_upgrade(config: GatewayConfig, postgres: PostgresServer) -> None:
    """An empty (or older) PostgreSQL database is refused at start until `gateway db upgrade`; the upgrade
    says from and to, and the gateway then starts on it."""
    config = reconfigure(config, store=postgres.url(postgres.fresh_database(migrated=False), password=PASSWORD_REF))
    line = one_error_line(run_gateway(config, "serve", "--http", f"127.0.0.1:{free_port()}"))
    assert f"schema version 0; this gateway needs {SCHEMA_VERSION}: run 'gateway db upgrade'" in line
    assert postgres.password not in line and "gateway:***@" in line
    assert run_gateway(config, "db", "status").returncode == 1
    upgraded = run_gateway(config, "db", "upgrade")
    assert upgraded.returncode == 0 and json.loads(upgraded.stdout) == {
        "store": postgres.url(config.store.rsplit("/", 1)[1], password="***"),
        "from": 0,
        "to": SCHEMA_VERSION,
    }
    assert run_gateway(config, "db", "status").returncode == 0
    assert Gateway(config).ledger.verify().ok


def test_an_unreachable_database_is_one_clear_line_and_no_half_start(config: GatewayConfig) -> None:
    port = free_port()  # nothing listens there
    config = reconfigure(config, store=f"postgresql://gateway:hunter2-secret@127.0.0.1:{port}/gateway")
    trees_before = sorted(config.worktrees.rglob("*")) if config.worktrees.exists() else None
    listen = free_port()
    line = one_error_line(run_gateway(config, "serve", "--http", f"127.0.0.1:{listen}"))
    assert line.startswith(f"gateway: cannot reach the store postgresql://gateway:***@127.0.0.1:{port}/gateway: ")
    assert "hunter2-secret" not in line
    with socket.socket() as probe:  # nothing was bound: the port is still free
        probe.bind(("127.0.0.1", listen))
    assert (sorted(config.worktrees.rglob("*")) if config.worktrees.exists() else None) == trees_before
    for argv in (("db", "status"), ("ledger", "verify"), ("token", "revoke", "x")):
        assert "hunter2-secret" not in one_error_line(run_gateway(config, *argv))


@pytest.mark.anyio
async def test_a_database_lost_mid_call_fails_closed(
    config: GatewayConfig, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """PostgreSQL stops while a write is being decided: its write-ahead ledger row cannot be committed, so
    the write never runs and the call is answered as failed; once the database is back, calls run again."""
    config = reconfigure(config, store=postgres.url(postgres.fresh_database(), password=PASSWORD_REF))
    gateway = Gateway(config)
    bearer = token(config, "developer")
    decide, lose = gateway.engine.decide, ["fs_write"]

    async def decide_then_lose_the_database(input_doc: Any) -> Any:
        decision = await decide(input_doc)
        if input_doc.get("tool", {}).get("name") in lose:
            lose.clear()  # once: the next write runs on the restarted server
            postgres.stop()
        return decision

    monkeypatch.setattr(gateway.engine, "decide", decide_then_lose_the_database)
    target = config.workspace / "written.txt"
    try:
        async with inproc_client(gateway, bearer) as client:
            assert not (await client.call_tool("fs_read", {"path": "README.md"})).is_error
            lost = await client.call_tool("fs_write", {"path": "written.txt", "content": "x"})
            assert lost.is_error and "nothing" in text_of(lost), text_of(lost)
            assert not target.exists(), "the side effect ran without its ledger row"
            postgres.restart()
            again = await client.call_tool("fs_write", {"path": "written.txt", "content": "y"})
            assert not again.is_error, text_of(again)
    finally:
        if postgres.process is None:
            postgres.restart()
    assert target.read_text() == "y"
    writes = [r for r in ledger_rows(gateway) if r.tool == "fs_write"]
    assert [r.outcome for r in writes] == ["started", "ok"], "the lost call left no row claiming it ran"
    assert gateway.ledger.verify().ok
    out, err = capfd.readouterr()
    assert postgres.password not in out + err


def test_sql_is_translated_once_and_passwords_are_masked() -> None:
    assert translate("SELECT * FROM t WHERE a = ? AND b LIKE ? || '%' AND c = '?'") == (
        "SELECT * FROM t WHERE a = %s AND b LIKE %s || '%%' AND c = '?'"
    )
    assert translate("SELECT body FROM ledger WHERE json_extract(body, '$.kind') = ?") == (
        "SELECT body FROM ledger WHERE (body::jsonb ->> 'kind') = %s"
    )
    assert mask_url("postgresql://gw:s3cr@t:x@db:5432/g") == "postgresql://gw:***@db:5432/g"
    assert mask_url("postgresql://gw@db/g?sslmode=require&password=s3cr") == (
        "postgresql://gw@db/g?sslmode=require&password=***"
    )


def test_a_store_that_is_not_a_postgresql_url_is_refused_without_echoing_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        GatewayConfig.from_mapping({"store": "mysql://root:topsecret@db/gw"}, base=tmp_path)
    assert "postgresql://" in refused.value.message and "topsecret" not in refused.value.message


def test_a_restarted_server_is_reconnected_to_but_a_transaction_it_cut_is_not_done(postgres: PostgresServer) -> None:
    """A kept connection found dead (the server restarted since) is replaced without failing the read; a
    transaction the restart cut short fails, and none of it is committed."""
    store = PostgresStore(postgres.url(postgres.fresh_database()))
    assert store.query("SELECT count(*) FROM revocations")[0][0] == 0
    postgres.stop()
    postgres.restart()
    assert store.query("SELECT count(*) FROM revocations")[0][0] == 0, "the read reconnected"
    with pytest.raises(StoreUnavailable, match="nothing was done"), store.transaction() as tx:
        tx.execute("INSERT INTO revocations (jti, time) VALUES (?, ?)", ("cut", "now"))
        postgres.stop()
        postgres.restart()
        tx.execute("INSERT INTO revocations (jti, time) VALUES (?, ?)", ("after", "now"))
    assert store.query("SELECT jti FROM revocations") == []


@pytest.mark.both_stores
@pytest.mark.anyio
async def test_the_review_index_is_written_with_each_call(config: GatewayConfig) -> None:
    """Each ledger row of a call updates the review index in its own transaction, on either store: pages, counts,
    the trace list and a trace agree with the calls made, with no catch-up left to do."""
    from gateway.store.repositories.review_index import catch_up
    from gateway.traces import Filters, Traces

    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "developer", agent="d1")) as client:
        for _ in range(3):
            assert not (await client.call_tool("fs_read", {"path": "README.md"})).is_error
        assert (await client.call_tool("fs_read", {"path": "/etc/shadow"})).is_error
        assert (await client.call_tool("fs_raed", {"path": "README.md"})).is_error
    assert catch_up(gateway.db) == 0, "indexed as written"
    traces = Traces.for_config(config, gateway.db)
    page = traces.page()
    assert [c.tool for c in page.calls] == ["fs_raed", "fs_read", "fs_read", "fs_read", "fs_read"]
    assert page.total == page.outcomes["any"] == 5 and page.outcomes["ok"] == 3 and page.outcomes["invalid"] == 2
    assert [c.tool for c in traces.page(Filters(rule="gateway.unknown_tool")).calls] == ["fs_raed"]
    assert traces.page(Filters(outcome="invalid", agent="d1")).total == 2
    [summary] = traces.list()  # the unknown tool's call has a trace of its own: grouped as noise, not listed
    assert (summary.calls, summary.denied, summary.agents, summary.tools) == (4, 1, ["d1"], ["fs_read"])
    assert traces.noise() == (1, 1) and len(traces.get(summary.trace_id[:8]).calls()) == 4
