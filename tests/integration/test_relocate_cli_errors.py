"""`hivecat relocate` against a real MariaDB when the input is wrong: a missing password, a wrong one, a
database that does not exist, a database that is not a metastore. One line each, exit 2, no traceback, no
secret in the output, and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

HIVECAT = Path(sys.executable).parent / "hivecat"
MOVE = ["--from", "hdfs://old-nn:8020/warehouse", "--to", "hdfs://new-nn:8020/warehouse"]


def relocate(catalog: str, password: str | None, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HIVECAT_CATALOG_PASSWORD"}
    if password is not None:
        env["HIVECAT_CATALOG_PASSWORD"] = password
    return subprocess.run([str(HIVECAT), "relocate", "--catalog", catalog, *MOVE, *extra], capture_output=True,
                          text=True, timeout=120, env=env)


def cli_url(sqlalchemy_url: str, database: str) -> tuple[str, str]:
    url = sa.make_url(sqlalchemy_url)
    return f"mysql://{url.username}@{url.host}:{url.port or 3306}/{database}", url.password or ""


@pytest.mark.parametrize("case,message", [
    ("no password", "access denied; no password was given: set $HIVECAT_CATALOG_PASSWORD or use --password-file"),
    ("wrong password", "access denied"),
    ("missing database", "no such database"),
    ("not a metastore", "not a Hive metastore schema"),
])
def test_database_errors_are_one_line(mariadb_server: str, scratch_mariadb: str, case: str, message: str) -> None:
    database = sa.make_url(scratch_mariadb).database
    catalog, password = cli_url(mariadb_server, "hc_no_such_db" if case == "missing database" else database)
    given = {"no password": None, "wrong password": "not-the-password"}.get(case, password)
    done = relocate(catalog, given)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr
    # The test user's password is also the program's and the user's name: look past those two words.
    said = done.stderr.replace("hivecat relocate:", "").replace(f"as {sa.make_url(mariadb_server).username}:", "")
    assert password not in said and "not-the-password" not in said
    engine = sa.create_engine(scratch_mariadb)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SHOW TABLES")).all() == []  # nothing was created or written
    finally:
        engine.dispose()
