"""The plans MariaDB and PostgreSQL pick for hivecat's relocation statements, at full size.

The same tables benchmarks/relocate.py builds (a real HMS 2.3 schema on MariaDB, the Hive 3.1 shape on
PostgreSQL) get one relocation each, old -> new. Every statement that reads or writes rows is EXPLAINed right
before it runs, in the run's own transaction, so each plan is the one chosen for the rows that statement met.
Printed per server: the slowest statements with their seconds and plans. Seconds come from the same run, so
they include nothing of the EXPLAINs but are one run's, not medians (benchmarks/relocate.py gives those).

    python benchmarks/relocate_explain.py            # 1,000,000 partitions
    python benchmarks/relocate_explain.py --small    # 2,000
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

from hivecat.local.scratch_db import create_database
from relocate import PG_SERVER_URL, SERVER_URL, Scratch
from relocate_phases import build as build_mariadb, parse_partitions
from relocate_support import hms_rows, pg_rows
from relocate_support.contenders import HivecatRun, hivecat_relocate

SHOWN = 6  # statements per server, slowest first


def explained(server_url: str, name: str, journal_schema: str) -> HivecatRun:
    run = hivecat_relocate(server_url, name, journal_schema, explain=True)
    if not run.rewritten:
        raise AssertionError(f"hivecat rewrote nothing in {name}")
    return run


def report(server: str, run: HivecatRun) -> dict:
    """Prints the slowest statements with their plans; their figures as flat JSON keys (`<server>_<n>_s`,
    `_sql`, `_plan`: plan lines joined by " | ")."""
    print(f"{server}: {run.rewritten} locations rewritten in {run.seconds:.2f} s; slowest statements and their plans")
    key = server.lower()
    shown: dict = {f"{key}_s": round(run.seconds, 3), f"{key}_rewritten": run.rewritten}
    for n, (seconds, statement) in enumerate(run.statements[:SHOWN], 1):
        plan = run.plans.get(statement, [])
        print(f"  {seconds:7.2f} s  {statement[:200]}")
        for line in plan:
            print(f"             {line}")
        shown.update({f"{key}_{n}_s": round(seconds, 3), f"{key}_{n}_sql": statement[:200],
                      f"{key}_{n}_plan": " | ".join(plan)})
    return shown


def main(argv: list[str] | None = None) -> int:
    partitions = parse_partitions(argv, __doc__)
    scratch, workdir = Scratch(uuid.uuid4().hex[:8]), Path(tempfile.mkdtemp(prefix="hivecat-bench-explain-"))
    figures: dict = {"partitions": partitions}
    try:
        name = build_mariadb(scratch, partitions, workdir)
        mariadb = explained(SERVER_URL, name, scratch.name("journal"))
        hms_rows.verify_relocated(hms_rows.database_url(SERVER_URL, name), partitions, "hivecat")
        pg_name = scratch.name("pg", PG_SERVER_URL)
        pg_url = create_database(PG_SERVER_URL, pg_name)
        pg_rows.build(pg_url, partitions)
        under = pg_rows.count_under(pg_url, hms_rows.OLD_ROOT)
        postgresql = explained(PG_SERVER_URL, pg_name, "hivecat_journal")
        if (pg_rows.count_under(pg_url, hms_rows.OLD_ROOT), pg_rows.count_under(pg_url, hms_rows.NEW_ROOT)) \
                != (0, under):
            raise AssertionError("hivecat on PostgreSQL left locations under the old prefix")
    finally:
        scratch.drop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    figures.update(report("MariaDB", mariadb))
    figures.update(report("PostgreSQL", postgresql))
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
