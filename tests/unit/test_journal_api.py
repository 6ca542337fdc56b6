"""The journal's parts for API backends (SQLite here): the lock table and the column added to old journals."""

from __future__ import annotations

import datetime as dt
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.catalog.journal import (
    parse_block,
    KIND_CODES, STATE_CODES, Journal, kind_code, kind_of, state_code, state_of,
)
from hivecat.catalog.model import ObjectKind

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


def test_ensure_copies_a_layout1_journal_from_before_api_backends(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with engine.begin() as conn:  # layout 1 as journals created before API backends have it: no `object`
        conn.execute(sa.text("CREATE TABLE hivecat_runs (run_id VARCHAR(36) PRIMARY KEY, catalog VARCHAR(512), "
                             "old_prefix VARCHAR(4000), new_prefix VARCHAR(4000), request TEXT, status VARCHAR(16), "
                             "started_at DATETIME, finished_at DATETIME, report TEXT)"))
        conn.execute(sa.text("CREATE TABLE hivecat_entries (run_id VARCHAR(36), kind VARCHAR(32), key1 BIGINT, "
                             "key2 VARCHAR(256), tbl_id BIGINT, chunk BIGINT, old_value TEXT, new_value TEXT, "
                             "state VARCHAR(16), PRIMARY KEY (run_id, kind, key1, key2))"))
        conn.execute(sa.text("INSERT INTO hivecat_runs VALUES ('r1', 'c', 'file:/a', 'file:/b', '{}', 'running', "
                             "'2026-01-02 03:04:05', NULL, NULL)"))
        conn.execute(sa.text("INSERT INTO hivecat_entries VALUES ('r1', 'table_param', 4, 'path', 3, 2, 'file:/a/x', "
                             "'file:/b/x', 'undo-conflicted')"))
    journal = Journal(engine, None)
    for _ in range(2):  # idempotent
        journal.ensure()
        assert not {"hivecat_runs", "hivecat_entries", "hivecat_locks"} & set(sa.inspect(engine).get_table_names())
        with engine.connect() as conn:
            assert journal.unfinished_run(conn, "c").run_id == "r1"
            assert journal.state_counts(conn, "r1") == {("table_param", "undo-conflicted"): 1}
            e = journal.entries
            assert conn.execute(sa.select(e.c.key1, e.c.key2, e.c.tbl_id, e.c.chunk, e.c.old_value, e.c.new_value,
                                          e.c.object)).all() == [(4, "path", 3, 2, "file:/a/x", "file:/b/x", None)]


def test_the_stored_codes_of_kinds_and_states_never_change() -> None:
    # Journals keep these numbers: renumbering one would misread every journal written before.
    assert {kind.value: code for kind, code in KIND_CODES.items()} == {
        "catalog": 1, "database": 2, "database_managed": 3, "table": 4, "partition": 5, "serde_param": 6,
        "table_param": 7, "partition_param": 8, "skewed_location": 9, "function_resource": 10}
    assert set(KIND_CODES) == set(ObjectKind)
    assert STATE_CODES == {"planned": 1, "applied": 2, "conflicted": 3, "undone": 4, "undo-conflicted": 5,
                           "failed": 6, "undo-failed": 7}
    assert all(kind_of(kind_code(kind)) is kind for kind in ObjectKind)
    assert all(state_of(state_code(state)) == state for state in STATE_CODES)


ODD_ENTRIES = [(7, "", "hdfs://nn/w/p=1,2"), (12345678901, "path", "s3://b/ü€😀\x00,9,x\"]\\"), (8, "3", "")]


def test_a_block_payload_reads_back_entry_by_entry() -> None:
    # Lengths count characters: commas, digits and any character inside a value are just its characters.
    payload = "".join(f"{k},{len(k2)},{k2}{len(v)},{v}" for k, k2, v in ODD_ENTRIES)
    assert parse_block(payload) == ODD_ENTRIES
    assert parse_block("") == []
    # Blocks written since: a JSON array of [key1, key2, old] (the server's JSON_QUOTE escapes what JSON needs).
    assert parse_block(json.dumps([list(entry) for entry in ODD_ENTRIES])) == ODD_ENTRIES
    assert parse_block("[]") == []


@pytest.mark.parametrize("payload", [
    "7,0,17,hdfs://nn/w/p=",  # the old value ends early
    "7,0,",  # no length of the old value
    '[[7, "", "hdfs://nn/w/p=1"], [8, "", "hdfs',  # a JSON block cut short
    '[[7, "", "hdfs://nn/w/p=1"], [8, ""]]',  # an entry without its old value
    '[["7", "", "hdfs://nn/w/p=1"]]',  # a key that is not a number
    '[[7, "", "hdfs://nn/w/p=1", "x"]]',  # a fourth element
    '[[7, "", null]]',
])
def test_a_damaged_block_payload_is_refused(payload: str) -> None:
    with pytest.raises(ValueError):
        parse_block(payload)
