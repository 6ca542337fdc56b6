"""Where a one-transaction MariaDB relocation spends its time, phase by phase, beside the bare UPDATE.

One table with N partitions is built as benchmarks/relocate.py builds it (a real HMS 2.3 schema). Each phase of
hivecat's run is then timed on its own, in a transaction rolled back afterwards, so every phase sees the same
rows: scope, refusals and the parameter tables' checks (prepare), the plan's SELECT alone (plan), the plan journaled with
INSERT ... SELECT (journal: that SELECT plus the writes), the capacity check of the planned values
(too_long), the column-wide UPDATE of SDS (apply) and the bare UPDATE of SDS (floor). Last, a whole
relocate() commits; `commit_and_rest_s` is what it took beyond the phases. `journal_free_over_floor` is that
run's time with the journal's writes taken out (its plan's SELECT kept) over the floor: how near the bare UPDATE a
journaled, compare-and-set run could come if writing every old value cost nothing.

    python benchmarks/relocate_phases.py             # 1,000,000 partitions
    python benchmarks/relocate_phases.py --small     # 2,000
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind, RelocationRequest
from hivecat.catalog.sql import relocation
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.locations.prefix import parse_prefix
from relocate import SERVER_URL, Scratch, log
from relocate_support import hms_rows
from relocate_support.contenders import floor_update
from relocate_support.hms_rows import NEW_ROOT, OLD_ROOT


def build(scratch: Scratch, partitions: int, workdir: Path) -> str:
    schema, name = scratch.name("hms"), scratch.name("table")
    hms_rows.create_schema_with_table(SERVER_URL, schema, workdir / "hms")
    hms_rows.copy_database(SERVER_URL, schema, name)
    hms_rows.fill_partitions(hms_rows.database_url(SERVER_URL, name), partitions)
    hms_rows.verify_built(hms_rows.database_url(SERVER_URL, name), partitions)
    return name


def timed(action) -> float:
    began = time.monotonic()
    action()
    return time.monotonic() - began


def phases(catalog: SqlCatalog, partitions: int) -> dict[str, float]:
    request = RelocationRequest(OLD_ROOT, NEW_ROOT)
    out: dict[str, float] = {}
    prepared: list = []
    with catalog.engine.connect() as conn:  # scope, refusals, and the parameter tables' checks (params_under)
        out["prepare_s"] = timed(lambda: prepared.append(
            catalog._prepare(conn, request, parse_prefix(OLD_ROOT), parse_prefix(NEW_ROOT))))
    plan = prepared[0][0]
    part = relocation.one_target_per_kind(catalog.targets)[ObjectKind.PARTITION]
    with catalog._transaction() as conn:
        sub = relocation._scoped(plan, part, catalog.schema)
        out["plan_select_s"] = timed(lambda: conn.execute(sa.select(sa.func.count()).select_from(sub)).scalar())
        conn.rollback()
    with catalog._transaction() as conn:
        run_id = catalog.journal.new_run(conn, catalog.name, request)
        out["journal_s"] = timed(lambda: relocation.write_plan(conn, catalog.schema, catalog.journal, run_id, plan,
                                                               "applied"))
        out["too_long_s"] = timed(lambda: relocation.too_long_planned(conn, catalog.journal, plan, run_id, 10))
        out["apply_s"] = timed(lambda: relocation.rewrite_matching(conn, part, plan, partitions + 1))
        conn.rollback()
    return out


def parse_partitions(argv: list[str] | None, doc: str) -> int:
    """--small (2,000) or --partitions N (default 1,000,000): the size of the one table a script builds."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="2,000 partitions")
    parser.add_argument("--partitions", type=int, help="partitions in the table (default 1,000,000)")
    args = parser.parse_args(argv)
    return args.partitions or (2000 if args.small else 1_000_000)


def main(argv: list[str] | None = None) -> int:
    partitions = parse_partitions(argv, __doc__)
    scratch, workdir = Scratch(uuid.uuid4().hex[:8]), Path(tempfile.mkdtemp(prefix="hivecat-bench-phases-"))
    try:
        name = build(scratch, partitions, workdir)
        url = hms_rows.database_url(SERVER_URL, name)
        catalog = SqlCatalog(url, journal_schema=scratch.name("journal"))
        try:
            catalog._ensure_journal()
            figures = phases(catalog, partitions)
            floor = scratch.name("floor")
            hms_rows.copy_database(SERVER_URL, name, floor)
            figures["floor_s"] = floor_update(SERVER_URL, floor)  # SDS and DBS, committed
            began = time.monotonic()
            catalog.relocate(RelocationRequest(OLD_ROOT, NEW_ROOT))
            figures["relocate_s"] = time.monotonic() - began
        finally:
            catalog.close()
        hms_rows.verify_relocated(url, partitions, "hivecat")
    finally:
        scratch.drop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    figures = {key: round(value, 3) for key, value in figures.items()}
    figures["commit_and_rest_s"] = round(figures["relocate_s"] - figures["journal_s"] - figures["too_long_s"]
                                         - figures["apply_s"] - figures["prepare_s"], 3)
    figures["partitions"] = partitions
    figures["relocate_over_floor"] = round(figures["relocate_s"] / figures["floor_s"], 2)
    # The same run had its journal cost nothing beyond reading the plan (the SELECT, which also takes the
    # locks the apply relies on): how far from the floor a one-transaction run is before it journals a byte.
    journal_free = figures["relocate_s"] - figures["journal_s"] + figures["plan_select_s"]
    figures["journal_free_over_floor"] = round(journal_free / figures["floor_s"], 2)
    for key in ("prepare_s", "plan_select_s", "journal_s", "too_long_s", "apply_s", "commit_and_rest_s",
                "relocate_s", "floor_s"):
        log(f"  {key:18s} {figures[key]:8.2f} s")
    log(f"  hivecat / floor {figures['relocate_over_floor']:.2f}x; without the journal's writes "
        f"{figures['journal_free_over_floor']:.2f}x")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
