"""`hivecat relocate`: rewrite storage locations in a metastore, anchored, scoped and journaled."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import sqlalchemy as sa

from hivecat.catalog.model import DEFAULT_PARAM_KEYS, RelocationRefused, RelocationReport, RelocationRequest, Scope

PASSWORD_ENV = "HIVECAT_CATALOG_PASSWORD"
# Short URL schemes users type, and the SQLAlchemy driver each means.
DRIVERS = {"mysql": "mysql+pymysql", "mariadb": "mysql+pymysql", "postgresql": "postgresql+psycopg",
           "postgres": "postgresql+psycopg"}
EXIT_REFUSED, EXIT_CONFLICTS = 3, 4


class UsageError(Exception):
    pass


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "relocate", help="rewrite storage locations in a metastore (anchored, scoped, journaled, undoable)",
        description="Rewrite every location under --from to the same path under --to: database, table and "
                    "partition locations, SerDe/table/partition parameters that hold locations, skewed-value "
                    "locations and function jars. The password comes from $%s or --password-file, never "
                    "from the command line." % PASSWORD_ENV)
    p.add_argument("--catalog", required=True, metavar="URL",
                   help="the metastore database: mysql://user@host:3306/db, postgresql://user@host:5432/db "
                        "(or any SQLAlchemy URL)")
    p.add_argument("--from", dest="old", metavar="URI", help="old location prefix, e.g. hdfs://old-nn:8020")
    p.add_argument("--to", dest="new", metavar="URI", help="new location prefix, e.g. hdfs://new-nn:8020")
    p.add_argument("--database", help="only this database (and its tables)")
    p.add_argument("--table", help="only this table (needs --database)")
    p.add_argument("--partition-filter", metavar="EXPR",
                   help="only partitions matching this HMS filter, e.g. \"dt >= '2026-01-01' AND region = 'eu'\"")
    p.add_argument("--param-key", action="append", dest="param_keys", metavar="KEY",
                   help=f"location-valued parameter key to rewrite (repeatable; default: {', '.join(DEFAULT_PARAM_KEYS)})")
    p.add_argument("--allow-scheme-change", action="store_true", help="allow e.g. hdfs:// -> s3://")
    p.add_argument("--force-acid", action="store_true", help="also relocate transactional (ACID) tables")
    p.add_argument("--skip-refused", action="store_true",
                   help="relocate the rest when some tables are refused (Iceberg, ACID), instead of nothing")
    p.add_argument("--dry-run", action="store_true", help="report what would change; write nothing")
    p.add_argument("--chunk-size", type=int, metavar="N",
                   help="commit every N rows per kind (resumable); default: one transaction")
    p.add_argument("--undo", metavar="RUN_ID", help="restore what run RUN_ID changed")
    p.add_argument("--history", action="store_true", help="list this catalog's runs")
    p.add_argument("--journal-schema", default="hivecat",
                   help="database (MySQL) or schema (PostgreSQL) that holds the journal (default: hivecat)")
    p.add_argument("--password-file", type=Path, help="file holding the database password")
    p.add_argument("--output", choices=("text", "json"), default="text")


def catalog_url(raw: str, password_file: Path | None) -> sa.URL:
    try:
        url = sa.make_url(raw)
    except sa.exc.ArgumentError:
        raise UsageError(f"--catalog {raw!r} is not a database URL") from None
    if url.password:
        raise UsageError(f"put the password in ${PASSWORD_ENV} or --password-file, not in --catalog")
    scheme = url.drivername
    if scheme in ("thrift", "glue"):
        raise UsageError(f"{scheme}:// catalogs are not supported by relocate yet; use the metastore database URL")
    url = url.set(drivername=DRIVERS.get(scheme, scheme))
    if url.get_backend_name() not in ("mysql", "mariadb", "postgresql"):
        raise UsageError(f"unsupported catalog database {scheme!r}: use mysql://, mariadb:// or postgresql://")
    password = os.environ.get(PASSWORD_ENV)
    if password_file is not None:
        try:
            password = password_file.read_text().rstrip("\n")
        except OSError as exc:
            raise UsageError(f"cannot read --password-file: {exc.strerror}") from None
    return url.set(password=password) if password else url


def _request(args: argparse.Namespace) -> RelocationRequest:
    if not args.old or not args.new:
        raise UsageError("--from and --to are required (or use --undo RUN_ID / --history)")
    try:
        scope = Scope(args.database, args.table, args.partition_filter)
    except ValueError as exc:
        raise UsageError(str(exc).replace("a table scope", "--table").replace("a partition filter", "--partition-filter")) from None
    return RelocationRequest(
        args.old, args.new, scope, tuple(args.param_keys or DEFAULT_PARAM_KEYS), args.allow_scheme_change,
        args.force_acid, args.skip_refused, args.dry_run, args.chunk_size)


def _progress(done: int, total: int) -> None:
    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\rchunks {done}/{total} [{'#' * filled}{'.' * (width - filled)}]")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def format_report(report: RelocationReport) -> str:
    title = "dry run" if report.dry_run else report.status
    lines = [f"run {report.run_id} ({title}) on {report.catalog}: {report.old_prefix} -> {report.new_prefix}",
             f"  {'kind':<18} {'rewritten':>10} {'skipped':>8} {'conflicted':>10} {'refused':>8}"]
    for kind, c in sorted(report.counts.items(), key=lambda kv: kv[0].value):
        lines.append(f"  {kind.value:<18} {c.rewritten:>10} {c.skipped:>8} {c.conflicted:>10} {c.refused:>8}")
    if report.sample:
        lines.append("sample:")
        lines += [f"  {old} -> {new}" for old, new in report.sample]
    for refusal in report.refusals:
        lines.append(f"refused ({refusal.reason}): {refusal.message}")
    if report.tables_touched:
        lines.append("tables touched (caching clients were not notified: REFRESH TABLE each, or REFRESH CATALOG):")
        lines += [f"  {name}" for name in report.tables_touched]
    if report.conflicted:
        lines.append(f"{report.conflicted} value(s) changed by someone else during the run were left as they are")
    lines.append(f"seconds: {report.seconds}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        url = catalog_url(args.catalog, args.password_file)
        request = None if (args.history or args.undo) else _request(args)
        from hivecat.catalog.sql.catalog import SqlCatalog  # validated input first: fail fast
        from hivecat.catalog.sql.schema import NotAMetastore

        try:
            catalog = SqlCatalog(url, journal_schema=args.journal_schema)
        except sa.exc.OperationalError as exc:
            raise UsageError(f"cannot connect to {url.render_as_string(hide_password=True)}: {exc.orig}") from None
        except NotAMetastore as exc:
            raise UsageError(str(exc)) from None
    except UsageError as exc:
        print(f"hivecat relocate: {exc}", file=sys.stderr)
        return 2
    try:
        if args.history:
            runs = catalog.history()
            if args.output == "json":
                print(json.dumps([r.__dict__ for r in runs], indent=2))
            else:
                for r in runs:
                    print(f"{r.run_id}  {r.status:<8} {r.started_at}  {r.rows:>8} rows  {r.old_prefix} -> {r.new_prefix}")
            return 0
        report = catalog.undo(args.undo) if args.undo else catalog.relocate(request, progress=_progress)
    except RelocationRefused as exc:
        if args.output == "json":
            print(json.dumps({"refused": [r.__dict__ for r in exc.refusals]}, indent=2))
        for refusal in exc.refusals:
            print(f"hivecat relocate: refused ({refusal.reason}): {refusal.message}", file=sys.stderr)
        return EXIT_REFUSED
    finally:
        catalog.close()
    print(json.dumps(report.to_dict(), indent=2) if args.output == "json" else format_report(report))
    return EXIT_CONFLICTS if report.conflicted else 0
