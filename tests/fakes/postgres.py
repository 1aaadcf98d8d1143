"""A throwaway PostgreSQL cluster for the tests: a real server from the installed binaries,
on 127.0.0.1 with password authentication, a fresh database per test, and `stop()` and
`start()` on the same data directory and port to simulate an outage.

Debian's stock server has no pgvector; a second server with it runs from the binaries the
`pgserver` wheel bundles (PostgreSQL 16 and pgvector, the `[test]` extra on Linux x86_64),
copied where the `postgres` user can read them when the tests run as root."""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import itertools
import os
import platform
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psycopg
from psycopg import sql

__all__ = [
    "APP_USER",
    "PgvectorNotFoundError",
    "PostgresNotFoundError",
    "PostgresServer",
    "find_bindir",
    "pgserver_binaries",
]

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
# Where pyproject.toml's `[test]` extra installs pgserver (its marker): Linux x86_64, and
# the Pythons it has wheels for.
PGSERVER_PLATFORM = ("Linux", "x86_64")
PGSERVER_PYTHONS = ((3, 10), (3, 12))


class PostgresNotFoundError(RuntimeError):
    """The PostgreSQL server binaries (initdb, pg_ctl, postgres) are not installed."""


class PgvectorNotFoundError(PostgresNotFoundError):
    """No server with pgvector: the `pgserver` wheel is not installed (it exists only for
    some platforms; elsewhere the pgvector tests are skipped)."""

    def __init__(self, reason: str, *, expected: bool) -> None:
        super().__init__(reason)
        # Whether the `[test]` extra installs pgserver here: then its absence is a failure.
        self.expected = expected


def pgserver_expected() -> bool:
    """Whether pyproject.toml's `[test]` extra installs pgserver on this interpreter."""
    low, high = PGSERVER_PYTHONS
    return (platform.system(), platform.machine()) == PGSERVER_PLATFORM and (
        low <= sys.version_info[:2] <= high
    )


def pgserver_install() -> Path:
    """The `pginstall` tree (bin, lib, share) of the installed pgserver wheel, found without
    importing pgserver (its import sets up directories of its own)."""
    spec = importlib.util.find_spec("pgserver")
    locations = list(spec.submodule_search_locations or ()) if spec else []
    for location in locations:
        tree = Path(location) / "pginstall"
        if _has_server_tools(tree / "bin"):
            return tree
    expected = pgserver_expected()
    where = f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"
    raise PgvectorNotFoundError(
        f"pgserver (PostgreSQL with pgvector) is not installed ({where}): "
        + (
            'pip install ".[test]" installs it here'
            if expected
            else 'the "[test]" extra installs it on Linux x86_64 with Python 3.10 to 3.12 '
            "only (its wheels)"
        ),
        expected=expected,
    )


@contextlib.contextmanager
def pgserver_binaries() -> Iterator[Path]:
    """The bin directory of pgserver's PostgreSQL with pgvector, where the user running the
    cluster can read and run it: under root, a copy in a temporary directory (the wheel sits
    in root's home, which `postgres` cannot enter), removed afterwards."""
    tree = pgserver_install()
    if os.geteuid() != 0:
        yield tree / "bin"
        return
    root = Path(tempfile.mkdtemp(prefix="aimemory-pgvector-"))
    try:
        root.chmod(0o755)
        # The same layout as in site-packages: the programs find the shared libraries the
        # wheel vendors by a relative rpath ($ORIGIN/../../../pgserver.libs).
        copy = root / "pgserver" / "pginstall"
        # Headers and static libraries are for building extensions, not for running them.
        shutil.copytree(tree, copy, ignore=shutil.ignore_patterns("include", "*.a"))
        libs = tree.parent.parent / "pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, root / libs.name)
        _readable_by_all(root)
        yield copy / "bin"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _readable_by_all(tree: Path) -> None:
    """Every file readable and every directory and program enterable by any user."""
    for path in [tree, *tree.rglob("*")]:
        mode = path.stat().st_mode
        extra = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
        if path.is_dir() or mode & stat.S_IXUSR:
            extra |= stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
        path.chmod(mode | extra)


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

    def __init__(self, bindir: Path | None = None) -> None:
        self.bindir = bindir or find_bindir()
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

    def admin_url(self, url: str) -> str:
        """The superuser's URL for the database of `url` (to set up what the app role may
        not, as a database administrator would)."""
        database = url.rsplit("/", 1)[1]
        return f"postgresql://{ADMIN_USER}:{self._admin_password}@{HOST}:{self.port}/{database}"

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
