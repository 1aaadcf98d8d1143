"""A throwaway PostgreSQL cluster for the tests: a real server from the installed binaries,
on 127.0.0.1 with password authentication, a fresh database per test, and `stop()` and
`start()` on the same data directory and port to simulate an outage."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psycopg
from psycopg import sql

__all__ = ["APP_USER", "PostgresNotFoundError", "PostgresServer", "find_bindir"]

HOST = "127.0.0.1"
ADMIN_USER = "postgres"
APP_USER = "aimemory"
DEBIAN_BINDIRS = "/usr/lib/postgresql/*/bin"
SERVER_TOOLS = ("initdb", "pg_ctl", "postgres")
COMMAND_TIMEOUT_SECONDS = 60
START_TIMEOUT_SECONDS = 30
CONNECT_TIMEOUT_SECONDS = 5
# Only TCP from 127.0.0.1, always with a password: a wrong one is refused, as in production.
PG_HBA = "host all all 127.0.0.1/32 scram-sha-256\n"


class PostgresNotFoundError(RuntimeError):
    """The PostgreSQL server binaries (initdb, pg_ctl, postgres) are not installed."""


def _has_server_tools(bindir: Path) -> bool:
    return all((bindir / tool).is_file() for tool in SERVER_TOOLS)


def _pg_config_bindir() -> Path | None:
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        return None
    found = subprocess.run(
        [pg_config, "--bindir"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS
    )
    return Path(found.stdout.strip()) if found.returncode == 0 else None


def find_bindir() -> Path:
    """The directory holding initdb, pg_ctl and postgres: pg_config's, else Debian's
    newest, else where `initdb` on PATH really lives."""
    candidates = [_pg_config_bindir()]
    # Newest first; the glob sorts "9.6" after "15", so compare the major versions.
    debian = sorted(glob.glob(DEBIAN_BINDIRS), key=lambda d: _major(Path(d)), reverse=True)
    candidates += [Path(d) for d in debian]
    on_path = shutil.which("initdb")
    candidates.append(Path(on_path).resolve().parent if on_path else None)
    for bindir in candidates:
        if bindir is not None and _has_server_tools(bindir):
            return bindir
    raise PostgresNotFoundError(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found via pg_config "
        f"--bindir, {DEBIAN_BINDIRS} or PATH; install them (apt-get install -y postgresql)"
    )


def _major(bindir: Path) -> float:
    try:
        return float(bindir.parent.name)
    except ValueError:
        return 0.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class _ClusterUser:
    """Who runs initdb and the server: the current user, or `postgres` under root, since
    initdb refuses to run as root."""

    uid: int | None = None
    gid: int | None = None

    @classmethod
    def for_this_process(cls) -> _ClusterUser:
        if os.geteuid() != 0:
            return cls()
        try:
            entry = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresNotFoundError(
                "running as root, and there is no `postgres` user to run initdb as"
            ) from None
        return cls(entry.pw_uid, entry.pw_gid)

    def own(self, path: Path) -> None:
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)

    def run(self, command: list[str], cwd: Path) -> None:
        """Run `command` as this user; a failure raises with its output."""
        # PG* variables of the developer's shell (PGPORT, PGDATA…) must not steer the cluster.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_SECONDS,
            user=self.uid,
            group=self.gid,
            extra_groups=None if self.uid is None else [],  # not root's groups
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{command[0]} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
            )


class PostgresServer:
    """A PostgreSQL cluster in a temporary directory, listening on 127.0.0.1 on a free
    port; `APP_USER` (not a superuser) owns the databases `fresh_database` makes."""

    def __init__(self) -> None:
        self.bindir = find_bindir()
        self.port = free_port()
        self.password = secrets.token_hex(12)
        self._admin_password = secrets.token_hex(12)
        self._user = _ClusterUser.for_this_process()
        self._root = Path(tempfile.mkdtemp(prefix="aimemory-pg-"))
        self._user.own(self._root)
        self.data_dir = self._root / "data"
        self._log = self._root / "server.log"
        self._names = itertools.count(1)
        self.running = False

    def __enter__(self) -> PostgresServer:
        try:
            self.initialise()
            self.start()
            self._create_app_role()
        except BaseException:
            self.destroy()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.destroy()

    def url(self, database: str, *, password: str | None = None) -> str:
        """The app role's URL for `database` (with another password, to test refusal)."""
        secret = self.password if password is None else password
        return f"postgresql://{APP_USER}:{secret}@{HOST}:{self.port}/{database}"

    def initialise(self) -> None:
        """initdb the data directory and configure it for a throwaway test server."""
        password_file = self._root / "admin-password"
        password_file.write_text(self._admin_password, encoding="utf-8")
        self._user.own(password_file)
        self._user.run(
            [
                str(self.bindir / "initdb"),
                *("-D", str(self.data_dir), "-U", ADMIN_USER, "--pwfile", str(password_file)),
                *("-E", "UTF8", "--locale", "C", "--no-sync", "--no-instructions"),
            ],
            cwd=self._root,
        )
        password_file.unlink()
        (self.data_dir / "pg_hba.conf").write_text(PG_HBA, encoding="utf-8")
        with (self.data_dir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(self._settings())

    def _settings(self) -> str:
        # No Unix socket (its path length is limited; TCP is what the plugin uses). No
        # fsync: an immediate stop is a process crash, which the OS cache survives, and a
        # throwaway cluster never needs to survive a power cut. synchronous_commit stays
        # on: off, an immediate stop loses commits the client was told of, which a real
        # outage does not.
        return (
            f"\nlisten_addresses = '{HOST}'\nport = {self.port}\n"
            "unix_socket_directories = ''\n"
            "fsync = off\nfull_page_writes = off\n"
        )

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        try:
            self._pg_ctl("start", "-w", "-t", str(START_TIMEOUT_SECONDS), "-l", str(self._log))
        except RuntimeError as error:
            raise RuntimeError(f"{error}\nserver log:\n{self._log_tail()}") from None
        self.running = True

    def stop(self) -> None:
        """Stop the server at once, dropping every connection, as in an outage."""
        self._pg_ctl("stop", "-w", "-m", "immediate")
        self.running = False

    def destroy(self) -> None:
        """Stop the server if it runs and remove its directory."""
        if self.running:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self.stop()
        shutil.rmtree(self._root, ignore_errors=True)

    @contextlib.contextmanager
    def fresh_database(self) -> Iterator[str]:
        """An empty database of its own, dropped afterwards; yields its URL."""
        name = f"aimemory_test_{next(self._names)}"
        self._admin(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(APP_USER)
            )
        )
        try:
            yield self.url(name)
        finally:
            # A test may leave the server stopped or connections open: restart it, and
            # FORCE closes what the test left open.
            if not self.running:
                self.start()
            self._admin(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

    def _create_app_role(self) -> None:
        self._admin(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(APP_USER), sql.Literal(self.password)
            )
        )

    def _admin(self, statement: sql.Composed) -> None:
        # CREATE/DROP DATABASE refuse to run inside a transaction block.
        with psycopg.connect(
            host=HOST,
            port=self.port,
            user=ADMIN_USER,
            password=self._admin_password,
            dbname="postgres",
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
        ) as connection:
            connection.execute(statement)

    def _pg_ctl(self, *args: str) -> None:
        self._user.run([str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), *args], self._root)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self._log.read_text(encoding="utf-8").splitlines()[-lines:])
        except OSError:
            return "(no log)"
