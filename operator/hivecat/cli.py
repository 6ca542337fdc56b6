"""The `hivecat` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from hivecat import __version__
from hivecat.malloc import return_freed_memory

HANDLERS_MODULE = "hivecat.handlers"
# The subcommands with a module of their own (hivecat/commands/), in the order help lists them. A command line
# imports only its own: `hivecat distcp` (a copy Job's process, many per replica) does not load relocate's
# SQLAlchemy; help and errors before a command is named import them all.
COMMANDS = {name: f"hivecat.commands.{name}" for name in ("relocate", "distcp", "route")}
SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


def cluster_configured(environ: Mapping[str, str] = os.environ, home: Path | None = None) -> bool:
    """Whether kopf will find a cluster: in-cluster credentials, or a kubeconfig file that exists."""
    if environ.get("KUBERNETES_SERVICE_HOST") and SERVICE_ACCOUNT_TOKEN.exists():
        return True
    paths = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if not paths:
        paths = [str((home or Path.home()) / ".kube" / "config")]
    return any(Path(p).is_file() for p in paths)


def watches_exact_namespaces(kopf_args: list[str]) -> bool:
    """Whether `kopf run` flags name namespaces only by name: no --all-namespaces, no glob or exclusion."""
    names: list[str] = []
    args = iter(kopf_args)
    for arg in args:
        if arg in ("-A", "--all-namespaces"):
            return False
        if arg in ("-n", "--namespace"):
            names.append(next(args, ""))
        elif arg.startswith("--namespace="):
            names.append(arg.split("=", 1)[1])
    return bool(names) and not any(set(name) & set("*?!,") or not name for name in names)


def _run_operator(kopf_args: list[str]) -> int:
    """`hivecat run ...` is `kopf run -m hivecat.handlers ...`: every kopf flag works unchanged."""
    if not {"--help", "-h"} & set(kopf_args) and not cluster_configured():
        print("hivecat run: no Kubernetes cluster to connect to: set KUBECONFIG to a kubeconfig file (or create "
              "~/.kube/config), or run the operator inside a cluster with a service account", file=sys.stderr)
        return 2
    import kopf.cli  # kopf is only needed by this subcommand

    return_freed_memory()
    from hivecat.config import EXACT_NAMESPACES_ENV
    if watches_exact_namespaces(kopf_args):  # before config() is first read, here and in the handlers
        os.environ[EXACT_NAMESPACES_ENV] = "true"
    lease = None
    if not {"--help", "-h"} & set(kopf_args):
        from hivecat.config import config

        settings = config()
        if settings.leader_lease:
            if not settings.pod_namespace:
                print("hivecat run: HIVECAT_LEADER_LEASE needs POD_NAMESPACE, the namespace of the lease",
                      file=sys.stderr)
                return 2
            try:
                lease = _lead(settings.pod_namespace, settings.leader_lease, settings.leader_lease_seconds)
            except Exception as error:  # noqa: BLE001 - e.g. RBAC without the lease, an unreachable API server
                status = getattr(error, "status", None)
                print(f"hivecat run: cannot take the leader lease {settings.pod_namespace}/{settings.leader_lease}"
                      f": {f'HTTP {status}: ' if status else ''}{getattr(error, 'reason', None) or error}",
                      file=sys.stderr)
                return 1
    try:
        kopf.cli.main.main(["run", "-m", HANDLERS_MODULE, *kopf_args], prog_name="hivecat")
    except SystemExit as exit_:  # click always exits; turn that into a return code
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else 1
    finally:
        if lease is not None:
            lease.release()
    return 0


def _lead(namespace: str, name: str, seconds: int):
    """Wait for the leader lease, then keep it while kopf runs (hivecat/leader.py)."""
    import logging

    from hivecat.leader import LeaderLease, LeaseStore, identity

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(name)-20s [%(levelname)-8s] %(message)s"))
    log = logging.getLogger("hivecat.leader")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # kopf configures the root logger later; this one keeps its own line format
    lease = LeaderLease(LeaseStore(namespace, name), identity(), seconds)
    lease.acquire()
    lease.keep()
    return lease


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with `only`, run and demo and that one subcommand of COMMANDS."""
    parser = argparse.ArgumentParser(
        prog="hivecat",
        description="Run Hive catalogs across several storage clusters (Kubernetes operator and tools).",
    )
    parser.add_argument("--version", action="version", version=f"hivecat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    sub.add_parser(
        "run", add_help=False,
        help="start the operator (all `kopf run` flags, e.g. --standalone, -A, -n NS; see `hivecat run --help`)",
    )

    demo = sub.add_parser(
        "demo", help="the whole product on local components: replicate, fail over, repair drift, route",
        description="Start a real Hive Metastore 2.3 (embedded Derby unless --mariadb-url is given) and a local "
                    "Spark session, create demo.sales partitioned by dt on a local-directory cluster `main`, "
                    "replicate it to a second one, `dr` (then only a new partition), fail over to dr (Spark "
                    "reads every row there) and back, find and repair a drifted table, and route two queries, "
                    "with the operator's own code; a summary at the end.",
    )
    demo.add_argument("--keep", action="store_true", help="keep the temporary directory with everything in it")
    demo.add_argument("--workdir", help="keep the metastore and warehouse here (default: a temporary directory)")
    demo.add_argument("--mariadb-url", metavar="URL",
                      help="a MariaDB/MySQL server, mysql://USER@HOST[:PORT] (password from "
                           "$HIVECAT_CATALOG_PASSWORD); the demo creates a latin1 database `hivecat_demo` on it for "
                           "the metastore instead of Derby, and replaces only one that an earlier demo created")
    for name, module in COMMANDS.items():
        if only in (None, name):
            importlib.import_module(module).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["run"]:  # kopf parses its own flags, including --help
        return _run_operator(args_list[1:])
    named = args_list[0] if args_list and args_list[0] in COMMANDS else None
    args = build_parser(only=named).parse_args(args_list)
    if args.command == "demo":
        from hivecat.demo import run_demo

        return run_demo(workdir=args.workdir, mariadb_url=args.mariadb_url, keep=args.keep)
    if args.command in COMMANDS:
        return importlib.import_module(COMMANDS[args.command]).run(args)
    raise AssertionError(f"unhandled command {args.command}")  # argparse rejects unknown commands first


if __name__ == "__main__":
    sys.exit(main())
