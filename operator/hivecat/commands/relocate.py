"""`hivecat relocate`: rewrite storage locations in a metastore, anchored, scoped and journaled."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from hivecat.catalog.model import DEFAULT_PARAM_KEYS, RelocationRefused, RelocationReport, RelocationRequest, Scope

PASSWORD_ENV = "HIVECAT_CATALOG_PASSWORD"
JOURNAL_PASSWORD_ENV = "HIVECAT_JOURNAL_PASSWORD"
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
                        "(or any SQLAlchemy URL); or glue://REGION[/CATALOG_ID] (AWS credentials from boto3's usual "
                        "chain: environment, profile, instance role); or thrift://HOST:PORT (a Hive Metastore)")
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
                   help="SQL: commit every N rows per kind (resumable); default: one transaction. Glue/Thrift: "
                        "partitions re-read and written per batch (default: 100 for Glue, 500 for Thrift)")
    p.add_argument("--undo", metavar="RUN_ID", help="restore what run RUN_ID changed")
    p.add_argument("--history", action="store_true", help="list this catalog's runs")
    p.add_argument("--journal-schema", default="hivecat",
                   help="database (MySQL) or schema (PostgreSQL) that holds the journal (default: hivecat)")
    p.add_argument("--password-file", type=Path, help="file holding the database password")
    p.add_argument("--journal-url", metavar="URL",
                   help="Glue/Thrift: SQLAlchemy URL of the journal database (password from $%s); default: a "
                        "SQLite file under $XDG_STATE_HOME/hivecat" % JOURNAL_PASSWORD_ENV)
    p.add_argument("--endpoint-url", metavar="URL", help="Glue: a non-default endpoint (e.g. a test server)")
    p.add_argument("--segments", type=int, default=1, metavar="N",
                   help="Glue: read partitions in N parallel segments (1..10, default 1)")
    p.add_argument("--skip-functions", action="store_true",
                   help="Glue: leave function (UDF) resource URIs alone, e.g. on a test endpoint without the UDF API")
    p.add_argument("--output", choices=("text", "json"), default="text")


@dataclass(frozen=True)
class ApiTarget:
    """A catalog reached through an API: glue://REGION[/CATALOG_ID] or thrift://HOST:PORT."""

    scheme: str
    host: str                # AWS region or metastore host
    port: int | None = None
    catalog_id: str | None = None


_REGION = re.compile(r"[a-z]{2,}(-[a-z0-9]+)+")


def api_target(raw: str) -> ApiTarget | None:
    """The glue:// or thrift:// catalog `raw` names; None for anything else (a database URL)."""
    scheme = raw.split("://", 1)[0].lower() if "://" in raw else ""
    if scheme not in ("glue", "thrift"):
        return None
    parts = urllib.parse.urlsplit(raw)
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"--catalog {raw!r}: the port must be a number 1..65535") from None
    if parts.username or parts.password or parts.query or parts.fragment:
        raise UsageError(f"--catalog {scheme}:// takes no user, password, query or fragment "
                         "(AWS credentials come from boto3's usual chain)")
    if scheme == "glue":
        region = parts.hostname or ""
        if not _REGION.fullmatch(region) or port is not None:
            raise UsageError(f"--catalog {raw!r}: expected glue://REGION[/CATALOG_ID], e.g. glue://eu-west-1")
        catalog_id = parts.path.lstrip("/") or None
        return ApiTarget("glue", region, catalog_id=catalog_id)
    if not parts.hostname or not port or parts.path.strip("/"):
        raise UsageError(f"--catalog {raw!r}: expected thrift://HOST:PORT, e.g. thrift://metastore:9083")
    return ApiTarget("thrift", parts.hostname, port)


def _database_url(raw: str, option: str, password_from: str) -> sa.URL:
    """A password-less SQLAlchemy URL with our short schemes mapped to drivers."""
    try:
        url = sa.make_url(raw)
    except sa.exc.ArgumentError:
        raise UsageError(f"{option} {raw!r} is not a database URL") from None
    if url.password:
        raise UsageError(f"put the password in {password_from}, not in {option}")
    return url.set(drivername=DRIVERS.get(url.drivername, url.drivername))


def journal_url(raw: str | None) -> str | None:
    if raw is None:
        return None
    url = _database_url(raw, "--journal-url", f"${JOURNAL_PASSWORD_ENV}")
    password = os.environ.get(JOURNAL_PASSWORD_ENV)
    return (url.set(password=password) if password else url).render_as_string(hide_password=False)


def catalog_url(raw: str, password_file: Path | None) -> sa.URL:
    url = _database_url(raw, "--catalog", f"${PASSWORD_ENV} or --password-file")
    if url.get_backend_name() not in ("mysql", "mariadb", "postgresql"):
        scheme = raw.split(":", 1)[0]
        raise UsageError(f"unsupported catalog database {scheme!r}: use mysql://, mariadb://, postgresql://, "
                         "glue:// or thrift://")
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
             f"  {'kind':<18} {'rewritten':>10} {'skipped':>8} {'conflicted':>10} {'refused':>8} {'failed':>7}"]
    for kind, c in sorted(report.counts.items(), key=lambda kv: kv[0].value):
        lines.append(f"  {kind.value:<18} {c.rewritten:>10} {c.skipped:>8} {c.conflicted:>10} {c.refused:>8} "
                     f"{c.failed:>7}")
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
    if report.failed:
        lines.append(f"{report.failed} value(s) could not be written (rerun to retry them):")
    lines += [f"  {error}" for error in report.errors]
    lines.append(f"seconds: {report.seconds}")
    return "\n".join(lines)


def _open_api_catalog(target: ApiTarget, args: argparse.Namespace):
    if not 1 <= args.segments <= 10:
        raise UsageError("--segments must be 1..10 (Glue's TotalSegments)")
    if args.segments != 1 and target.scheme != "glue":
        raise UsageError("--segments applies to glue:// catalogs only")
    if (args.endpoint_url or args.skip_functions) and target.scheme != "glue":
        raise UsageError("--endpoint-url and --skip-functions apply to glue:// catalogs only")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError("--chunk-size must be at least 1")
    journal = journal_url(args.journal_url)
    if target.scheme == "glue":
        from hivecat.catalog.glue import GlueCatalog

        return GlueCatalog(target.host, catalog_id=target.catalog_id, endpoint_url=args.endpoint_url,
                           journal_url=journal, segments=args.segments, functions=not args.skip_functions)
    from hivecat.catalog.thrift import ThriftCatalog

    try:
        return ThriftCatalog(f"thrift://{target.host}:{target.port}", journal_url=journal)
    except OSError as exc:
        raise UsageError(f"cannot connect to thrift://{target.host}:{target.port}: {exc}") from None


def _open_catalog(args: argparse.Namespace):
    target = api_target(args.catalog)
    if target is not None:
        return _open_api_catalog(target, args)
    url = catalog_url(args.catalog, args.password_file)
    from hivecat.catalog.sql.catalog import SqlCatalog  # validated input first: fail fast
    from hivecat.catalog.sql.schema import NotAMetastore

    try:
        return SqlCatalog(url, journal_schema=args.journal_schema)
    except sa.exc.OperationalError as exc:
        raise UsageError(f"cannot connect to {url.render_as_string(hide_password=True)}: {exc.orig}") from None
    except NotAMetastore as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    try:
        request = None if (args.history or args.undo) else _request(args)
        catalog = _open_catalog(args)
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
    return EXIT_CONFLICTS if report.conflicted or report.failed else 0
