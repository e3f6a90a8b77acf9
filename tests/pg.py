"""A real PostgreSQL for the tests: Debian's server binaries, run as the ``postgres`` user on a private port
and a unix socket dir in a temporary directory, with a fresh database per test.

    server = PostgresServer.start()       # initdb, postgres, a role with a password, a migrated template
    url = server.fresh_database()        # CREATE DATABASE ... TEMPLATE (milliseconds)
    server.stop(); server.restart()      # what the "database lost mid-call" tests do
    server.close()

The tests' server runs with fsync off (a test cluster is thrown away, never recovered); ``durable=True``
keeps PostgreSQL's defaults, for benchmarks.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from gateway.process import free_port

PASSWORD_VAR = "GATEWAY_TEST_PGPASSWORD"  # gateway.yaml says ${GATEWAY_TEST_PGPASSWORD}; no file holds it
TEMPLATE = "gateway_template"


def server_binaries() -> Path | None:
    """The newest installed server's bin dir (Debian: /usr/lib/postgresql/<major>/bin), None without one."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    def __init__(self, bin_dir: Path, root: Path, port: int, password: str, durable: bool = False) -> None:
        self.durable = durable
        self.bin_dir = bin_dir
        self.root = root
        self.port = port
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None
        self._names = itertools.count(1)

    @classmethod
    def start(cls, bin_dir: Path, durable: bool = False) -> PostgresServer:
        root = Path(tempfile.mkdtemp(prefix="gateway-pg-"))  # /tmp: the postgres user can enter it
        server = cls(bin_dir, root, free_port(), "pw-" + secrets.token_hex(8), durable)
        server._chown(root)
        (root / "pwfile").write_text(server.password + "\n")
        server._chown(root / "pwfile")
        server._as_owner(
            str(bin_dir / "initdb"),
            *("-D", str(root / "data"), "-U", "gateway", "--pwfile", str(root / "pwfile")),
            *("--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"),
        )
        (root / "pwfile").unlink()
        server.restart()
        from gateway.store.postgres import PostgresStore

        server.admin(f"CREATE DATABASE {TEMPLATE}")
        template = PostgresStore(server.url(TEMPLATE))
        template.upgrade()
        template.close()
        return server

    def url(self, database: str, password: str | None = None) -> str:
        """A URL over TCP with the password (or, with ``password="${VAR}"``, a reference to it)."""
        return f"postgresql://gateway:{password or self.password}@127.0.0.1:{self.port}/{database}"

    def fresh_database(self, migrated: bool = True) -> str:
        """A new database at the current schema, copied from the migrated template (or, with
        ``migrated=False``, an empty one); answers its name."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        self.admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE if migrated else 'template0'}")
        return name

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(host=str(self.root), port=self.port, user="gateway", dbname="postgres") as conn:
            conn.autocommit = True
            conn.execute(sql)  # type: ignore[arg-type]

    def restart(self) -> None:
        """Start the server (again) and wait until it accepts connections."""
        assert self.process is None
        argv = [str(self.bin_dir / "postgres"), "-D", str(self.root / "data"), "-p", str(self.port)]
        argv += ["-k", str(self.root), "-h", "127.0.0.1", "-c", "max_connections=200"]
        if not self.durable:
            argv += ["-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off"]
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 (the server's whole life)
        self.process = subprocess.Popen(self._owner_argv(argv), stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 60
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start: {(self.root / 'server.log').read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Fast shutdown (SIGINT): every session is ended, as when a database server goes away."""
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(60)
            self.process = None

    def close(self) -> None:
        if self.process is not None:  # immediate shutdown: the cluster is thrown away, nothing to flush
            self.process.send_signal(signal.SIGQUIT)
            self.process.wait(60)
            self.process = None
        shutil.rmtree(self.root, ignore_errors=True)

    def _ready(self) -> bool:
        import psycopg

        try:
            psycopg.connect(host=str(self.root), port=self.port, user="gateway", dbname="postgres").close()
        except psycopg.OperationalError:
            return False
        return True

    def _owner_argv(self, argv: list[str]) -> list[str]:
        # PostgreSQL refuses to run as root: as root, run it as the postgres system user
        if os.geteuid() != 0:
            return argv
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *argv]

    def _as_owner(self, *argv: str) -> None:
        subprocess.run(self._owner_argv(list(argv)), check=True, capture_output=True)

    def _chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(path, user.pw_uid, user.pw_gid)
