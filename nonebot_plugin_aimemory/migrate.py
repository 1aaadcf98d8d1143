"""`python -m nonebot_plugin_aimemory.migrate --to postgresql://… [--from PATH]`: copy the
bot's SQLite database (by default the one its configuration names) into PostgreSQL, with a
progress bar, in batches; run it again after an interruption and it completes the copy,
copying nothing twice. The bot must be stopped (checked: a running bot marks its
database). At the end, every table's row count on both sides; the rows either database
refused are listed, with their key and the error, in a file beside the SQLite file
(`aimemory.db.refused-rows.csv`), and the exit status is 1."""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
from collections import Counter
from pathlib import Path

from .store import Backend, PluginStateStore, redacted, running_bot
from .store.copying import CopyReport, RefusedRow, copy_all
from .store.opening import DatabaseUnreachable, open_backend, open_file

BAR_WIDTH = 30
REFUSED_ROWS_SUFFIX = ".refused-rows.csv"


def main(argv: list[str] | None = None) -> int:
    """Run the copy; the exit status is 0 when every row was copied."""
    parser = argparse.ArgumentParser(
        prog="python -m nonebot_plugin_aimemory.migrate",
        description="Copy the plugin's SQLite database into PostgreSQL (the bot stopped).",
    )
    parser.add_argument("--to", required=True, help="postgresql://user:password@host:port/db")
    parser.add_argument("--from", dest="source", help="the SQLite file (default: the bot's)")
    args = parser.parse_args(argv)
    source = Path(args.source) if args.source else Path(configured_database())
    if not source.is_file():
        print(f"no SQLite database at {source}", file=sys.stderr)
        return 2
    return asyncio.run(migrate(source, args.to))


def configured_database() -> str:
    """The database file the bot's configuration names (its .env, as the bot reads it)."""
    from . import default_db_path

    return default_db_path()


async def migrate(source_path: Path, url: str) -> int:
    """Copy, print the counts; 0 when done, 1 when a table or a row was left behind, 2 when
    the copy was refused."""
    try:
        target = await open_backend("", url)
    except DatabaseUnreachable as error:
        print(error, file=sys.stderr)
        return 2
    assert target is not None
    source = await open_file(source_path)
    try:
        if (refusal := await _bot_running(source, target)) is not None:
            print(refusal, file=sys.stderr)
            return 2
        print(f"copying {source_path} to {redacted(url)}")
        report = await copy_all(source, target, _show_progress)
    finally:
        await source.close()
        await target.close()
    print_report(report)
    refused_file = refused_rows_file(source_path)
    write_refused_rows(refused_file, report.refused)
    if report.refused:
        print_refused_rows(report.refused, refused_file)
    return 1 if report.failed or report.refused else 0


async def _bot_running(source: Backend, target: Backend) -> str | None:
    """Why the copy may not start: a bot runs on either database."""
    for name, database in (("SQLite", source), ("PostgreSQL", target)):
        running = await running_bot(PluginStateStore(database))
        if running is not None:
            return (
                f"a bot is running on the {name} database (process {running}): stop it "
                "first, then run the migration again"
            )
    return None


def _show_progress(table: str, done: int, total: int) -> None:
    """One line per table, redrawn in place: `chat_log  [#####-----]  5000 / 10000`."""
    filled = BAR_WIDTH * done // total if total else BAR_WIDTH
    bar = "#" * filled + "-" * (BAR_WIDTH - filled)
    end = "\n" if done >= total else ""
    print(f"\r  {table:<20} [{bar}] {done:>9} / {total}", end=end, file=sys.stderr, flush=True)


def print_report(report: CopyReport) -> None:
    """Every table: rows in SQLite, in PostgreSQL, copied by this run, refused; failures
    named."""
    print(f"{'table':<20} {'SQLite':>10} {'PostgreSQL':>12} {'copied now':>12} {'refused':>9}")
    for table in report.tables:
        print(
            f"{table.name:<20} {table.source_rows:>10} {table.target_rows:>12} "
            f"{table.copied:>12} {len(table.refused):>9}"
        )
    for table in report.failed:
        print(f"table {table.name} could not be copied: {table.error}", file=sys.stderr)
    if report.failed:
        print("the other tables were copied; fix the file and run the migration again")


def refused_rows_file(source_path: Path) -> Path:
    """Where the rows left behind are listed: beside the SQLite file."""
    return source_path.with_name(source_path.name + REFUSED_ROWS_SUFFIX)


def write_refused_rows(path: Path, rows: list[RefusedRow]) -> None:
    """The list of this run's refused rows (table, key, error), or none: a list left by an
    earlier run is removed once its rows are copied, so the file means rows are missing."""
    if not rows:
        path.unlink(missing_ok=True)
        return
    # With a byte-order mark: a spreadsheet on Windows then reads the Chinese in it.
    with path.open("w", encoding="utf-8-sig", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(("table", "key", "error"))
        writer.writerows((row.table, row.key, row.error) for row in rows)


def print_refused_rows(rows: list[RefusedRow], path: Path) -> None:
    """How many rows were left behind, from which tables, and where they are listed."""
    per_table = ", ".join(
        f"{table} {count}" for table, count in Counter(r.table for r in rows).items()
    )
    were = "row was" if len(rows) == 1 else "rows were"
    print(
        f"{len(rows)} {were} not copied ({per_table}): each is listed with its key and the "
        f"error in {path}",
        file=sys.stderr,
    )
    print(
        "fix or delete them in the SQLite file and run the migration again: it copies what "
        "is missing, nothing twice"
    )


if __name__ == "__main__":
    raise SystemExit(main())
