"""The journal's parts for API backends (SQLite here): the lock table and the column added to old journals."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from hivecat.catalog.journal import Journal

CATALOG = "glue://eu-west-1"


def journal(tmp_path: Path) -> Journal:
    j = Journal(sa.create_engine(f"sqlite:///{tmp_path / 'j.db'}"), None)
    j.ensure(locks=True)
    return j


def hold(j: Journal, owner: str, expires: dt.datetime) -> None:
    with j.engine.begin() as conn:
        conn.execute(j.locks.insert().values(catalog=CATALOG, owner=owner, acquired_at=dt.datetime(2026, 1, 1),
                                             expires_at=expires))


def test_one_holder_at_a_time_and_release(tmp_path: Path) -> None:
    j = journal(tmp_path)
    assert j.acquire_lock(CATALOG, 60)
    assert not j.acquire_lock(CATALOG, 60)          # held by a live process (this one)
    assert j.acquire_lock("glue://us-east-1", 60)  # another catalog is independent
    j.release_lock(CATALOG)
    assert j.acquire_lock(CATALOG, 60)


def test_live_foreign_lock_blocks_expired_one_does_not(tmp_path: Path) -> None:
    j = journal(tmp_path)
    hold(j, "another-host:1", dt.datetime.now() + dt.timedelta(hours=1))
    assert not j.acquire_lock(CATALOG, 60)
    with j.engine.begin() as conn:
        conn.execute(j.locks.update().values(expires_at=dt.datetime(2000, 1, 1)))
    assert j.acquire_lock(CATALOG, 60)


def test_lock_of_a_dead_process_on_this_host_is_stale_at_once(tmp_path: Path) -> None:
    j = journal(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    hold(j, f"{socket.gethostname()}:{dead.pid}", dt.datetime.now() + dt.timedelta(hours=1))
    assert j.acquire_lock(CATALOG, 60)


def test_ensure_adds_the_object_column_to_an_older_journal(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with engine.begin() as conn:  # the entries table as journals created before API backends have it
        conn.execute(sa.text("CREATE TABLE hivecat_entries (run_id VARCHAR(36), kind VARCHAR(32), key1 BIGINT, "
                             "key2 VARCHAR(256), tbl_id BIGINT, chunk BIGINT, old_value TEXT, new_value TEXT, "
                             "state VARCHAR(16), PRIMARY KEY (run_id, kind, key1, key2))"))
    Journal(engine, None).ensure()
    columns = {c["name"] for c in sa.inspect(engine).get_columns("hivecat_entries")}
    assert "object" in columns
    assert "hivecat_locks" not in sa.inspect(engine).get_table_names()  # SQL journals get no lock table
