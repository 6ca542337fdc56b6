"""What PostgreSQL did around a timed run: checkpoints, WAL written, autovacuum and autoanalyze of the metastore's
tables. The 1M-partition figure on PostgreSQL varies from run to run; each round prints these beside its seconds,
so a slow round shows whether a checkpoint or an autovacuum ran with it."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa


@dataclass(frozen=True)
class Activity:
    checkpoints_timed: int
    checkpoints_requested: int
    wal_lsn: int  # bytes since the cluster began
    autovacuums: int  # of the database's tables, since the statistics were reset
    autoanalyzes: int
    vacuum_workers: int  # autovacuum workers running at that moment, in any database


def _checkpoints(conn: sa.Connection) -> tuple[int, int]:
    if conn.dialect.server_version_info >= (17,):  # the counters moved to their own view
        row = conn.execute(sa.text("SELECT num_timed, num_requested FROM pg_stat_checkpointer")).one()
    else:
        row = conn.execute(sa.text("SELECT checkpoints_timed, checkpoints_req FROM pg_stat_bgwriter")).one()
    return int(row[0]), int(row[1])


def snapshot(url: str) -> Activity:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT pg_stat_clear_snapshot()"))  # counters as of now, not the transaction's
            timed, requested = _checkpoints(conn)
            lsn = conn.execute(sa.text("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")).scalar_one()
            vacuums, analyzes = conn.execute(sa.text(
                "SELECT coalesce(sum(autovacuum_count), 0), coalesce(sum(autoanalyze_count), 0) "
                "FROM pg_stat_user_tables")).one()
            workers = conn.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'")).scalar_one()
        return Activity(timed, requested, int(lsn), int(vacuums), int(analyzes), int(workers))
    finally:
        engine.dispose()


def between(before: Activity, after: Activity) -> dict[str, int]:
    """What happened from one snapshot to the next (the autovacuum workers: seen running at either end)."""
    return {"checkpoints": after.checkpoints_timed - before.checkpoints_timed
            + after.checkpoints_requested - before.checkpoints_requested,
            "checkpoints_requested": after.checkpoints_requested - before.checkpoints_requested,
            "wal_mib": (after.wal_lsn - before.wal_lsn) // (1024 * 1024),
            "autovacuums": after.autovacuums - before.autovacuums,
            "autoanalyzes": after.autoanalyzes - before.autoanalyzes,
            "vacuum_workers": max(before.vacuum_workers, after.vacuum_workers)}


def described(seen: dict[str, int]) -> str:
    return (f"{seen['checkpoints']} checkpoint(s) ({seen['checkpoints_requested']} requested), "
            f"{seen['wal_mib']} MiB of WAL, {seen['autovacuums']} autovacuum(s) and {seen['autoanalyzes']} "
            f"autoanalyze(s) of the metastore's tables, {seen['vacuum_workers']} autovacuum worker(s) running")
