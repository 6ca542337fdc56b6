"""`hivecat distcp`: copy directories (table or partition units) with -update semantics, atomically
per unit, verified and resumable. Exit 0: all units done or up to date; 1: some unit failed;
2: bad input (nothing written)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

# Only light modules at the top: every `hivecat` command builds this parser. The engine (pyarrow,
# jsonschema) is imported when distcp runs.
from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import (
    CREDENTIALS_DIR_ENV, ENDPOINT_ENVS, WEBHDFS_CA_BUNDLE_ENV, WEBHDFS_PRINCIPAL_ENV, Location, S3Settings, Storage,
    WebHdfsSettings,
)
from hivecat.kerberos.login import KEYTAB_ENV, PRINCIPAL_ENV, KerberosLogin

if TYPE_CHECKING:
    from hivecat.copy.copier import Copier
    from hivecat.copy.summary import CopySummary

EXIT_FAILED_UNITS, EXIT_USAGE = 1, 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "distcp", help="copy tables/partitions between filesystems (-update, atomic per unit, verified)",
        description="Copy each unit (a directory: an unpartitioned table or one partition) from source to "
                    "target. Files already up to date are skipped; the rest is copied into a hidden staging "
                    "directory beside the target, verified, and committed as a whole, with a "
                    "_hivecat_manifest.json inside. Nothing is written under a source, and no symbolic link is "
                    "followed: a unit whose directory is, or passes through, one fails (with --from/--to: "
                    "refused). Units owned by a TableReplica (their manifest says so) are left alone. Locations "
                    "are URIs "
                    "(file://, s3://, hdfs://), as for `hivecat relocate`: a bare path is refused. S3 settings "
                    f"come from the environment: endpoint from ${' / $'.join(ENDPOINT_ENVS)}, credentials from "
                    f"the files in ${CREDENTIALS_DIR_ENV} (access-key-id, secret-access-key) or "
                    "$AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY, never from the command line. On a kerberized "
                    "HDFS, WebHDFS is reached with SPNEGO as --principal with its --keytab "
                    f"(or ${PRINCIPAL_ENV} / ${KEYTAB_ENV}), else as the ticket cache's principal (kinit); "
                    f"${WEBHDFS_PRINCIPAL_ENV} names the namenodes' HTTP principal (HTTP/_HOST@REALM) and "
                    f"${WEBHDFS_CA_BUNDLE_ENV} the CA of their HTTPS certificates.")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--plan", metavar="URI|PATH",
                      help="a plan document (JSON, version 1): the units to copy; a URI (file://, s3://, hdfs://) "
                           "or a local path")
    what.add_argument("--from", dest="source", metavar="URI",
                      help="source directory URI, e.g. file:///data/t or s3://bucket/t (one unit; needs --to)")
    p.add_argument("--to", dest="target", metavar="URI", help="target directory URI (with --from)")
    p.add_argument("--plan-digest", metavar="sha256:HEX",
                   help="with --plan: refuse (exit 2, nothing written) a plan whose bytes have another digest")
    p.add_argument("--engine", choices=("auto", "spark", "local"), default="auto",
                   help="local: threads in this process; spark: Spark executors; auto: by size (default)")
    p.add_argument("--verify", choices=("size", "checksum"), default="size",
                   help="size: up to date when size and recorded source mtime match, copies checked by size; "
                        "checksum: content checksums (CRC32C) on both sides, copies re-read and checked "
                        "(default: size)")
    p.add_argument("--parallelism", type=int, metavar="N", help="concurrent copy tasks")
    p.add_argument("--bandwidth", type=float, metavar="MBps", help="limit per copy task, in MB/s")
    p.add_argument("--delete", action="store_true",
                   help="remove target files absent from the source (inside target units only)")
    p.add_argument("--dry-run", action="store_true", help="report what would be copied; write nothing")
    p.add_argument("--output", choices=("text", "json"), default="text")
    p.add_argument("--principal", metavar="NAME@REALM", help="Kerberos principal for hdfs:// (SPNEGO to WebHDFS)")
    p.add_argument("--keytab", metavar="PATH", help="the principal's keytab file (default: the ticket cache)")


def _copier(args: argparse.Namespace) -> Copier:
    from hivecat.copy.copier import Copier, CopyOptions, link_refusal
    from hivecat.copy.plan import single_unit_plan
    from hivecat.copy.plan_store import check_digest, plan_source, read_plan

    s3: S3Settings | None = None
    if args.plan is not None:
        if args.target:
            raise CopyInputError("--to goes with --from, not with --plan")
        digest = None if args.plan_digest is None else check_digest(args.plan_digest)
        where = plan_source(args.plan)
        if where.is_object_store:
            s3 = S3Settings.from_environment()
        plan = read_plan(Storage(s3 or S3Settings(), _webhdfs(args)), where, digest)
    else:
        if args.plan_digest is not None:
            raise CopyInputError("--plan-digest goes with --plan")
        if not args.target:
            raise CopyInputError("--from needs --to")
        plan = single_unit_plan(args.source, args.target, roles=("--from", "--to"))
    if args.parallelism is not None and args.parallelism < 1:
        raise CopyInputError("--parallelism must be at least 1")
    if args.bandwidth is not None and args.bandwidth <= 0:
        raise CopyInputError("--bandwidth must be positive")
    options = CopyOptions(verify=args.verify, delete=args.delete, dry_run=args.dry_run,
                          parallelism=args.parallelism,
                          bandwidth=args.bandwidth * 1_000_000 if args.bandwidth else None)
    needs_s3 = any(loc.is_object_store for u in plan.units for loc in (u.source, u.target))
    if needs_s3 and s3 is None:
        s3 = S3Settings.from_environment()
    storage = Storage(s3 or S3Settings(), _webhdfs(args))
    _authenticate(storage, [loc for u in plan.units for loc in (u.source, u.target)])
    if args.plan is None:  # one unit named here: a directory through a link is bad input (a plan's unit fails alone)
        for role, root in (("--from", plan.units[0].source), ("--to", plan.units[0].target)):
            refusal = link_refusal(storage, root)
            if refusal is not None:
                raise CopyInputError(f"{role} {refusal}")
    return Copier(plan, options, storage, engine=args.engine)


def _webhdfs(args: argparse.Namespace) -> WebHdfsSettings:
    settings = WebHdfsSettings.from_environment()
    if args.keytab and not args.principal:
        raise CopyInputError("--keytab needs --principal (the keytab may hold several)")
    if args.principal:
        return dataclasses.replace(settings, kerberos=KerberosLogin(args.principal, args.keytab))
    return settings


def _authenticate(storage: Storage, locations: list[Location]) -> None:
    """Each namenode once, before anything is written: one that cannot be reached, or a login it does not accept,
    is bad input, said in one line."""
    seen: set[str] = set()
    for location in locations:
        if location.scheme != "hdfs" or location.authority in seen:
            continue
        seen.add(location.authority)
        try:
            storage.filesystem(location).get_file_info("/")
        except OSError as exc:  # AuthenticationFailed among them
            raise CopyInputError(f"hdfs://{location.authority}: {exc}") from None


class ProgressBar:
    """One line on stderr, redrawn at most a few times a second; only on a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.last = 0.0
        self.drawn = False

    def __call__(self, files: int, files_total: int, size: int, size_total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.2 and files < files_total):
            return
        self.last = now
        width = 30
        filled = width * size // max(size_total, 1) if size_total else width * files // max(files_total, 1)
        sys.stderr.write(f"\rfiles {files}/{files_total}  {size / 1e6:,.1f}/{size_total / 1e6:,.1f} MB "
                         f"[{'#' * filled}{'.' * (width - filled)}]")
        self.drawn = True
        sys.stderr.flush()

    def close(self) -> None:
        """Ends the line once the run is over (a window's end is not: the totals grow as units are decided)."""
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def format_summary(summary: CopySummary) -> str:
    totals = summary.totals()
    title = "dry run" if summary.dry_run else summary.status
    lines = [f"run {summary.run_id} ({title}, engine {summary.engine}, verify {summary.verify}): "
             f"{totals['units_done']} unit(s) {'to copy' if summary.dry_run else 'copied'}, "
             f"{totals['units_skipped']} up to date, {totals['units_failed']} failed",
             f"  files copied {totals['files_copied']}, bytes {totals['bytes_copied']}, "
             f"up to date {totals['files_skipped']}, deleted {totals['files_deleted']}, "
             f"seconds {summary.seconds}"]
    for unit in summary.units:
        reason = f": {unit.reason}" if unit.reason else ""
        lines.append(f"  {unit.status:<7} {unit.id}  ({unit.files_copied} files, {unit.bytes_copied} bytes)"
                     f"{reason}")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    """`hivecat distcp ARGV` without the rest of the command line (the copy SparkApplication's driver)."""
    parser = argparse.ArgumentParser(prog="hivecat")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(["distcp", *argv]))


def run(args: argparse.Namespace) -> int:
    try:
        copier = _copier(args)
        bar = ProgressBar()
        try:
            summary = copier.run(progress=bar)
        finally:
            bar.close()
    except CopyInputError as exc:
        print(f"hivecat distcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.output == "json":
        summary.write_json(sys.stdout)
    else:
        print(format_summary(summary))
    return EXIT_FAILED_UNITS if summary.status == "failed" else 0
