"""`hivecat route`: which cluster can run a query over these tables, from the catalog's replica bookkeeping
and the cluster registry (the `clusters.json` a catalog's `<catalog>-clusters` ConfigMap holds)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from hivecat import reasons
from hivecat.commands.relocate import (
    EXIT_REFUSED, EXIT_USAGE, UsageError, add_catalog_arguments, catalog_target, open_catalog_from)
from hivecat.replication.registry import ClusterEntry, parse_registry_document
from hivecat.replication.placement import placement_of
from hivecat.replication.routing import route


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "route", help="which cluster can run a query over the given tables",
        description="Say which registered cluster can run a query that reads TABLEs (and writes the --insert-into "
                    "table): the output table's primary cluster, else the first input's primary cluster that holds "
                    "every partition of every input, counting verified replicas. Exit 0 with the cluster, 3 when "
                    "no cluster qualifies, 2 on bad input.")
    p.add_argument("tables", nargs="+", metavar="TABLE", help="an input table, db.table")
    add_catalog_arguments(p)
    p.add_argument("--clusters", required=True, type=Path, metavar="FILE",
                   help="the catalog's cluster registry: clusters.json from its <catalog>-clusters ConfigMap")
    p.add_argument("--insert-into", metavar="TABLE", help="the output table, db.table")
    p.add_argument("--cluster", help="check this cluster only, instead of choosing one")
    p.add_argument("--output", choices=("text", "json"), default="text")
    p.set_defaults(journal_schema="hivecat", journal_url=None, connections=None)  # routing reads; it never journals


def _clusters(path: Path) -> dict[str, ClusterEntry]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read --clusters {str(path)!r}: {exc.strerror}") from None
    clusters = parse_registry_document(text)
    if not clusters:
        raise UsageError(f"--clusters {str(path)!r} holds no cluster registry (clusters.json)")
    return clusters


def _table_name(text: str, what: str) -> str:
    database, dot, table = text.partition(".")
    if not dot or not database or not table or "." in table:
        raise UsageError(f"{what} {text!r} must be db.table")
    return text


def run(args: argparse.Namespace) -> int:
    try:
        inputs = [_table_name(t, "table") for t in args.tables]
        output = _table_name(args.insert_into, "--insert-into") if args.insert_into else None
        clusters = _clusters(args.clusters)
        if args.cluster is not None and args.cluster not in clusters:
            raise UsageError(f"--cluster {args.cluster!r} is not in the registry ({', '.join(sorted(clusters))})")
        catalog = open_catalog_from(args, catalog_target(args))
    except UsageError as exc:
        print(f"hivecat route: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        placements = [placement_of(catalog, clusters, name) for name in inputs]
        written = placement_of(catalog, clusters, output) if output else None
    finally:
        catalog.close()
    decision = route(placements, written, args.cluster)
    if args.output == "json":
        print(json.dumps({**asdict(decision), "inputs": [_placement_json(p) for p in placements],
                          "output": _placement_json(written) if written else None}, indent=2))
    elif decision.cluster is not None:
        print(f"{decision.cluster}: {decision.message}")
    if decision.cluster is None:
        print(f"hivecat route: {decision.reason}: {decision.message}", file=sys.stderr)
        return EXIT_USAGE if decision.reason == reasons.TABLE_NOT_FOUND else EXIT_REFUSED
    return 0


def _placement_json(placement) -> dict:
    return {"table": placement.table, "exists": placement.exists, "primary": placement.primary,
            "holding": sorted(placement.holding)}
