"""The store on its own: ledger appends per second on SQLite and on PostgreSQL, from one writer and from
several processes at once (each append is one write transaction: read the chain's last row, write the next).

    .venv/bin/python bench/bench_store.py                          # a throwaway PostgreSQL, fsync on (tests/pg.py)
    .venv/bin/python bench/bench_store.py --url postgresql://gateway:${PGPASSWORD}@db/gateway_bench --appends 2000

With ``--url`` the database is used as it is: give it an empty, scratch database (its ledger is appended to).
Figures go to stdout as a table; nothing here is a test.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from gateway.ledger.chain import Ledger  # noqa: E402
from gateway.store import SqliteStore, Store  # noqa: E402


def appender(open_store: Callable[[], Store], count: int) -> None:
    ledger = Ledger(open_store())
    for i in range(count):
        ledger.append({"kind": "call", "tool": "fs_read", "outcome": "ok", "call_id": f"c{i}"})


def rate(open_store: Callable[[], Store], writers: int, appends: int) -> float:
    """Appends per second with ``writers`` processes sharing ``appends`` between them."""
    each = appends // writers
    start = time.perf_counter()
    if writers == 1:
        appender(open_store, each)
    else:
        procs = [multiprocessing.Process(target=appender, args=(open_store, each)) for _ in range(writers)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
    return each * writers / (time.perf_counter() - start)


class SQLite:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> Store:
        return SqliteStore.open(self.path)


class Postgres:
    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self) -> Store:
        from gateway.store.postgres import PostgresStore

        store = PostgresStore(self.url)
        store.upgrade()
        return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a scratch PostgreSQL database (default: start one with tests/pg.py)")
    parser.add_argument("--appends", type=int, default=1000, help="appends per measurement")
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 4], help="concurrent writer processes")
    args = parser.parse_args()
    server = None
    if args.url is None:
        from pg import PostgresServer, server_binaries

        binaries = server_binaries()
        if binaries is None:
            sys.exit("no PostgreSQL server binaries: install postgresql or pass --url")
        server = PostgresServer.start(binaries, durable=True)  # fsync on, as a real server runs
    try:
        with tempfile.TemporaryDirectory() as scratch:
            print(f"{'store':<12} {'writers':>7} {'appends/s':>10}")
            for writers in args.writers:
                stores: dict[str, Callable[[], Store]] = {"sqlite": SQLite(Path(scratch) / f"w{writers}.db")}
                if server is not None:
                    stores["postgresql"] = Postgres(server.url(server.fresh_database()))
                else:
                    stores["postgresql"] = Postgres(args.url)
                for name, opener in stores.items():
                    print(f"{name:<12} {writers:>7} {rate(opener, writers, args.appends):>10.0f}", flush=True)
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
