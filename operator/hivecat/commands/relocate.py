"""`hivecat relocate`: rewrite storage locations in a metastore, anchored, scoped and journaled."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

import sqlalchemy as sa

from hivecat import reasons
from hivecat.catalog.connect import CatalogUnavailable, JournalSettings, open_catalog
from hivecat.kerberos.login import KerberosLogin
from hivecat.catalog.journal import JournalUnavailable
from hivecat.catalog.run import checked_prefixes
from hivecat.catalog.model import (
    DEFAULT_PARAM_KEYS, EVENTS_AUTO, EVENTS_OFF, EVENTS_ON, Refusal, RelocationRefused, RelocationReport, RelocationRequest, Scope,
)
from hivecat.catalog.targets import (
    DEFAULT_THRIFT_CONNECTIONS, MAX_THRIFT_CONNECTIONS, SQL_DRIVERS, SQL_SCHEMES, CatalogTarget, GlueTarget,
    InvalidTarget, SqlTarget, ThriftSasl, ThriftTarget, target_from_url,
)
from hivecat.locations.partition_filter import FilterError, check_filter_syntax

PASSWORD_ENV = "HIVECAT_CATALOG_PASSWORD"
JOURNAL_PASSWORD_ENV = "HIVECAT_JOURNAL_PASSWORD"
# Short schemes users type for a journal database, and the SQLAlchemy driver each means.
JOURNAL_DRIVERS = {scheme: SQL_DRIVERS[dialect] for scheme, dialect in SQL_SCHEMES.items()}
# Exit codes, documented once (README "Exit codes"): 0 done, 2 bad input (nothing contacted or written),
# 3 refused (well-formed but unsafe; nothing written), 4 done with conflicts or failures.
EXIT_USAGE, EXIT_REFUSED, EXIT_CONFLICTS = 2, 3, 4
# How this front end sets each request option a refusal names (Refusal.option).
OPTION_HINTS = {"force_acid": "rerun with --force-acid", "undo": "undo it with --undo RUN_ID",
                "chunk_size": "--chunk-size", "allow_scheme_change": "rerun with --allow-scheme-change",
                "skip_refused": "or relocate the rest with --skip-refused",
                "notification_events": "or rerun with --no-notification-events, which tells no event reader"}


class UsageError(Exception):
    pass


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "relocate", help="rewrite storage locations in a metastore (anchored, scoped, journaled, undoable)",
        description="Rewrite every location under --from to the same path under --to: database, table and "
                    "partition locations, SerDe/table/partition parameters that hold locations, skewed-value "
                    "locations and function jars. The password comes from $%s or --password-file, never "
                    "from the command line." % PASSWORD_ENV)
    add_catalog_arguments(p)
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
    p.add_argument("--connections", type=int, metavar="N",
                   help=f"Thrift: write N chunks at once, each through a metastore connection of its own "
                        f"(1..{MAX_THRIFT_CONNECTIONS}, default {DEFAULT_THRIFT_CONNECTIONS})")
    p.add_argument("--undo", metavar="RUN_ID", help="restore what run RUN_ID changed")
    p.add_argument("--history", action="store_true", help="list this catalog's runs")
    p.add_argument("--journal-schema", default="hivecat",
                   help="database (MySQL) or schema (PostgreSQL) that holds the journal (default: hivecat)")
    p.add_argument("--journal-url", metavar="URL",
                   help="Glue/Thrift: SQLAlchemy URL of the journal database (password from $%s); default: a "
                        "SQLite file under $XDG_STATE_HOME/hivecat, or $HIVECAT_JOURNAL_URL" % JOURNAL_PASSWORD_ENV)
    events = p.add_mutually_exclusive_group()
    events.add_argument("--no-notification-events", dest="notification_events", action="store_const",
                        const=EVENTS_OFF, default=EVENTS_AUTO,
                        help="SQL: log no notification events for the rewrite (default: log one per changed "
                             "object where the metastore runs a notification listener)")
    events.add_argument("--notification-events", dest="notification_events", action="store_const", const=EVENTS_ON,
                        help="SQL: log notification events even where no listener has ever logged one")
    p.add_argument("--output", choices=("text", "json"), default="text")


def add_catalog_arguments(p: argparse.ArgumentParser) -> None:
    """Where the catalog is and how to reach it: shared by every subcommand that opens one."""
    p.add_argument("--catalog", required=True, metavar="URL",
                   help="the metastore database: mysql://user@host:3306/db, postgresql://user@host:5432/db "
                        "(or any SQLAlchemy URL); or glue://REGION[/CATALOG_ID] (AWS credentials from boto3's usual "
                        "chain: environment, profile, instance role); or thrift://HOST:PORT (a Hive Metastore)")
    p.add_argument("--password-file", type=Path, help="file holding the database password")
    p.add_argument("--endpoint-url", metavar="URL", help="Glue: a non-default endpoint (e.g. a test server)")
    p.add_argument("--segments", type=int, default=1, metavar="N",
                   help="Glue: read partitions in N parallel segments (1..10, default 1)")
    p.add_argument("--skip-functions", action="store_true",
                   help="Glue: leave function (UDF) resource URIs alone, e.g. on a test endpoint without the UDF API")
    p.add_argument("--metastore-principal", metavar="PRINCIPAL",
                   help="Thrift: a kerberized metastore's principal (its hive.metastore.kerberos.principal, e.g. "
                        "hive/_HOST@EXAMPLE.COM; _HOST becomes the URL's host): connect with SASL GSSAPI")
    p.add_argument("--principal", metavar="NAME@REALM",
                   help="Thrift: connect to the kerberized metastore as this principal (default: the ticket cache's)")
    p.add_argument("--keytab", metavar="PATH", help="Thrift: the --principal's keytab file (default: the ticket cache)")


def _password(password_file: Path | None) -> str | None:
    """The metastore database password: --password-file, else $HIVECAT_CATALOG_PASSWORD."""
    if password_file is not None:
        try:
            return password_file.read_text().rstrip("\n")
        except OSError as exc:
            raise UsageError(f"cannot read --password-file {str(password_file)!r}: {exc.strerror}") from None
    return os.environ.get(PASSWORD_ENV) or None


def journal_url(raw: str | None) -> str | None:
    """--journal-url as a SQLAlchemy URL, its password from $HIVECAT_JOURNAL_PASSWORD (never the URL)."""
    if raw is None:
        return None
    try:
        url = sa.make_url(raw)
    except (sa.exc.ArgumentError, ValueError):
        raise UsageError(f"--journal-url {raw!r} is not a database URL") from None
    if url.password or any(key.lower() in ("password", "passwd") for key in url.query):
        raise UsageError(f"put the journal password in ${JOURNAL_PASSWORD_ENV}, not in --journal-url")
    url = url.set(drivername=JOURNAL_DRIVERS.get(url.drivername, url.drivername))
    password = os.environ.get(JOURNAL_PASSWORD_ENV)
    return (url.set(password=password) if password else url).render_as_string(hide_password=False)


def catalog_target(args: argparse.Namespace) -> CatalogTarget:
    """--catalog and the backend-specific options as a typed target; nothing is contacted."""
    try:
        target = target_from_url(args.catalog)
        if isinstance(target, GlueTarget):
            target = dataclasses.replace(target, endpoint=args.endpoint_url, segments=args.segments,
                                         functions=not args.skip_functions)
    except InvalidTarget as exc:
        raise UsageError(f"--catalog: {exc}".replace("--catalog: unsupported", "unsupported")) from None
    if not isinstance(target, GlueTarget):
        if args.segments != 1 or args.endpoint_url or args.skip_functions:
            raise UsageError("--segments, --endpoint-url and --skip-functions apply to glue:// catalogs only")
    target = _with_sasl(target, args)
    if isinstance(target, SqlTarget) and args.journal_url:
        raise UsageError("--journal-url applies to glue:// and thrift:// catalogs; a database catalog keeps its "
                         "journal beside the metastore (--journal-schema)")
    return _with_connections(target, args.connections)


def _with_sasl(target: CatalogTarget, args: argparse.Namespace) -> CatalogTarget:
    """--metastore-principal (with --principal/--keytab, or the ticket cache) on a Thrift target."""
    principal, keytab, service = (getattr(args, name, None) for name in ("principal", "keytab", "metastore_principal"))
    if not (principal or keytab or service):
        return target
    if not isinstance(target, ThriftTarget):
        raise UsageError("--metastore-principal, --principal and --keytab apply to thrift:// catalogs only")
    if not service:
        raise UsageError("a kerberized metastore needs --metastore-principal: its hive.metastore.kerberos.principal, "
                         "e.g. hive/_HOST@EXAMPLE.COM")
    if keytab and not principal:
        raise UsageError("--keytab needs --principal (the keytab may hold several)")
    return dataclasses.replace(target, sasl=ThriftSasl(KerberosLogin(principal, keytab), service))


def _with_connections(target: CatalogTarget, connections: int | None) -> CatalogTarget:
    """--connections on a Thrift target (None: its default)."""
    if connections is None:
        return target
    if not isinstance(target, ThriftTarget):
        raise UsageError("--connections applies to thrift:// catalogs only")
    try:
        return dataclasses.replace(target, connections=connections)
    except InvalidTarget as exc:
        raise UsageError(f"--connections: {exc}") from None


def _request(args: argparse.Namespace) -> RelocationRequest:
    """The request, with everything that needs no catalog checked first: a typo never reaches a database."""
    if not args.old or not args.new:
        raise UsageError("--from and --to are required (or use --undo RUN_ID / --history)")
    try:
        scope = Scope(args.database, args.table, args.partition_filter)
    except ValueError as exc:
        raise UsageError(str(exc).replace("a table scope", "--table").replace("a partition filter", "--partition-filter")) from None
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError("--chunk-size must be at least 1")
    request = RelocationRequest(
        args.old, args.new, scope, tuple(args.param_keys or DEFAULT_PARAM_KEYS), args.allow_scheme_change,
        args.force_acid, args.skip_refused, args.dry_run, args.chunk_size)
    try:
        checked_prefixes(request)
    except RelocationRefused as refused:
        # A malformed prefix is bad input (2); a well-formed but unsafe pair (overlap, scheme change, too
        # long to store) is a refusal (3). Either way nothing is contacted.
        [refusal] = refused.refusals
        if refusal.reason == "invalid-uri":
            raise UsageError(refusal.message.replace("old prefix", "--from").replace("new prefix", "--to")) from None
        raise
    if args.partition_filter:
        try:
            check_filter_syntax(args.partition_filter)
        except FilterError as exc:
            raise UsageError(f"--partition-filter: {exc}") from None
    return request


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
        lines.append(_refusal_line(refusal))
    if report.notification_events:
        lines.append(f"notification events: {report.notification_events} logged in the metastore's notification log "
                     "(event-driven readers such as Impala and Hive replication refresh what they name)")
    lines += [f"note: {note}" for note in report.notes]
    if report.tables_touched:
        told = "readers of the notification log were told" if report.notification_events else \
            "caching clients were not notified"
        lines.append(f"tables touched ({told}; other caching clients: REFRESH TABLE each, or REFRESH CATALOG):")
        lines += [f"  {name}" for name in report.tables_touched]
    if report.conflicted:
        lines.append(f"{report.conflicted} value(s) changed by someone else during the run were left as they are")
    if report.failed:
        lines.append(f"{report.failed} value(s) could not be written (rerun to retry them):")
    lines += [f"  {error}" for error in report.errors]
    lines.append(f"seconds: {report.seconds}")
    return "\n".join(lines)


def open_catalog_from(args: argparse.Namespace, target: CatalogTarget):
    password = _password(args.password_file) if isinstance(target, SqlTarget) else None
    journal = JournalSettings(schema=args.journal_schema, url=journal_url(args.journal_url))
    try:
        return open_catalog(target, password=password, journal=journal,
                            notification_events=getattr(args, "notification_events", EVENTS_AUTO))
    except CatalogUnavailable as exc:
        hint = ""
        if exc.reason == reasons.AUTHENTICATION_FAILED and not exc.password_given:
            hint = f"; no password was given: set ${PASSWORD_ENV} or use --password-file"
        raise UsageError(f"{exc.message}{hint}") from None


def _refusal_line(refusal: Refusal) -> str:
    hint = OPTION_HINTS.get(refusal.option or "")
    return f"refused ({refusal.reason}): {refusal.message}" + (f" [{hint}]" if hint else "")


def _print_refused(refused: RelocationRefused, output: str) -> int:
    if output == "json":
        print(json.dumps({"refused": [r.__dict__ for r in refused.refusals]}, indent=2))
    for refusal in refused.refusals:
        print(f"hivecat relocate: {_refusal_line(refusal)}", file=sys.stderr)
    return EXIT_REFUSED


def run(args: argparse.Namespace) -> int:
    try:
        request = None if (args.history or args.undo) else _request(args)
        target = catalog_target(args)
        journal_url(args.journal_url)  # a malformed journal URL is bad input too, before connecting
        catalog = open_catalog_from(args, target)
    except UsageError as exc:
        print(f"hivecat relocate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RelocationRefused as exc:
        return _print_refused(exc, args.output)
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
        return _print_refused(exc, args.output)
    except JournalUnavailable as exc:
        hint = " (--journal-schema)" if isinstance(target, SqlTarget) else ""
        print(f"hivecat relocate: {exc}{hint}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        catalog.close()
    print(json.dumps(report.to_dict(), indent=2) if args.output == "json" else format_report(report))
    return EXIT_CONFLICTS if report.conflicted or report.failed else 0
