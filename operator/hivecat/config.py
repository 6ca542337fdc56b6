"""The operator's own settings, read from the environment once at startup.

Everything else receives an OperatorConfig (or calls config()) instead of reading os.environ itself, so
the environment is parsed in one place and tests can build a config from a plain dict.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hivecat.durations import duration_seconds

APP_NAME = "hivecat"
# The metastore image of a HiveCatalog that names none: always allowed, whatever the image allow-list says.
DEFAULT_METASTORE_IMAGE = "apache/hive:3.1.3"
DEFAULT_RECHECK_SECONDS = 60.0
DEFAULT_DRIFT_SCAN_SECONDS = 1800.0  # a ClusterStorage's drift scan interval when its spec names none
DEFAULT_LEASE_SECONDS = 15  # a standby takes over this long after the active replica stopped renewing
# What a resource may ask for at the most often, unless a CatalogPolicy of its namespace says otherwise.
DEFAULT_MIN_SYNC_INTERVAL = 60.0          # TableReplica spec.schedule.interval
DEFAULT_MIN_HOUSEKEEPING_DELAY = 3600.0   # TableReplica spec.housekeeping.delay
DEFAULT_MIN_SCAN_INTERVAL = 60.0          # ClusterStorage spec.scanInterval
EXACT_NAMESPACES_ENV = "HIVECAT_EXACT_NAMESPACES"
DEFAULT_WORKERS = 4                    # threads per kind
DEFAULT_LOCAL_COPIES = 2               # Local copy processes at once
DEFAULT_STARTUP_SPREAD_SECONDS = 30.0  # the first syncs after a start, spread over this long


@dataclass(frozen=True)
class OperatorConfig:
    state_dir: Path  # local state (e.g. journals) of this process; created by whoever writes to it
    journal_url: str | None = None  # HIVECAT_JOURNAL_URL: SQLAlchemy URL of the journal (None: SQLite in state_dir)
    pod_namespace: str | None = None  # POD_NAMESPACE: the operator's own namespace (the Helm chart sets it)
    # HIVECAT_ALLOWED_IMAGES / HIVECAT_ALLOWED_SERVICE_ACCOUNTS (comma-separated, from the chart's values):
    # what custom resources may name for the pods the operator creates (reconcile/policy.py).
    allowed_images: tuple[str, ...] = ()
    allowed_service_accounts: tuple[str, ...] = ()
    metastore_image: str = DEFAULT_METASTORE_IMAGE  # HIVECAT_METASTORE_IMAGE
    # HIVECAT_RECHECK_SECONDS: how often a catalog's backends are re-checked (database, metastore, Glue)
    recheck_seconds: float = DEFAULT_RECHECK_SECONDS
    # HIVECAT_DRIFT_SCAN_SECONDS: how often each ClusterStorage scans its catalog for drift (jittered ±10%)
    drift_scan_seconds: float = DEFAULT_DRIFT_SCAN_SECONDS
    # HIVECAT_JOURNAL_SCHEMA: the database (MySQL) or schema (PostgreSQL) on a SQL catalog's own server that
    # holds its relocation journal; the catalog's database user needs rights there.
    journal_schema: str = "hivecat"
    # HIVECAT_METRICS_PORT: where /metrics is served (Prometheus); unset or 0: not served
    metrics_port: int = 0
    # HIVECAT_LEADER_LEASE: the Lease (in POD_NAMESPACE) that only the active replica holds; None: no election
    leader_lease: str | None = None
    leader_lease_seconds: int = DEFAULT_LEASE_SECONDS  # HIVECAT_LEADER_LEASE_SECONDS
    # HIVECAT_POLICY_ENFORCEMENT: Enforce (refuse what no CatalogPolicy grants) or Audit (report it, block
    # nothing: for upgrades, until the policies are written)
    policy_enforcement: str = "Enforce"
    # HIVECAT_MIN_SYNC_INTERVAL / _HOUSEKEEPING_DELAY / _SCAN_INTERVAL (seconds): the defaults of a policy's minimums
    min_sync_interval: float = DEFAULT_MIN_SYNC_INTERVAL
    min_housekeeping_delay: float = DEFAULT_MIN_HOUSEKEEPING_DELAY
    min_scan_interval: float = DEFAULT_MIN_SCAN_INTERVAL
    # HIVECAT_EXACT_NAMESPACES: `hivecat run` sets it when it watches named namespaces only (no -A, no
    # pattern): kopf then needs not list namespaces or CRDs to find what it watches.
    exact_namespaces: bool = False
    # HIVECAT_WORKERS: threads per kind for blocking passes (HiveCatalog checks, ClusterStorage registrations and
    # scans, TableReplica syncs), so that one kind's slow passes never hold another's
    workers: int = DEFAULT_WORKERS
    # HIVECAT_LOCAL_COPIES: Local copy processes running at once (each ~120 MB); more wait for a slot
    local_copies: int = DEFAULT_LOCAL_COPIES
    # HIVECAT_STARTUP_SPREAD_SECONDS: after a start, the first syncs are spread over this long (0: all at once)
    startup_spread_seconds: float = DEFAULT_STARTUP_SPREAD_SECONDS
    # HIVECAT_KEYTAB_DIR: the namespaces' keytabs, files of the operator's (the chart: a volume in memory);
    # None: state_dir/keytabs
    keytab_dir: Path | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> "OperatorConfig":
        return cls(
            state_dir=_state_home(environ) / APP_NAME,
            keytab_dir=Path(environ["HIVECAT_KEYTAB_DIR"]) if environ.get("HIVECAT_KEYTAB_DIR") else None,
            journal_url=environ.get("HIVECAT_JOURNAL_URL") or None,
            journal_schema=environ.get("HIVECAT_JOURNAL_SCHEMA", "").strip() or "hivecat",
            pod_namespace=environ.get("POD_NAMESPACE") or None,
            allowed_images=_list(environ.get("HIVECAT_ALLOWED_IMAGES", "")),
            allowed_service_accounts=_list(environ.get("HIVECAT_ALLOWED_SERVICE_ACCOUNTS", "")),
            metastore_image=environ.get("HIVECAT_METASTORE_IMAGE", "").strip() or DEFAULT_METASTORE_IMAGE,
            recheck_seconds=_seconds(environ.get("HIVECAT_RECHECK_SECONDS", ""), DEFAULT_RECHECK_SECONDS),
            drift_scan_seconds=_seconds(environ.get("HIVECAT_DRIFT_SCAN_SECONDS", ""), DEFAULT_DRIFT_SCAN_SECONDS),
            metrics_port=_port(environ.get("HIVECAT_METRICS_PORT", "")),
            leader_lease=environ.get("HIVECAT_LEADER_LEASE", "").strip() or None,
            leader_lease_seconds=int(_seconds(environ.get("HIVECAT_LEADER_LEASE_SECONDS", ""), DEFAULT_LEASE_SECONDS)),
            # anything but Audit enforces: a typo must never turn the policy off
            policy_enforcement="Audit" if environ.get("HIVECAT_POLICY_ENFORCEMENT", "").strip() == "Audit"
            else "Enforce",
            min_sync_interval=_duration(environ.get("HIVECAT_MIN_SYNC_INTERVAL", ""), DEFAULT_MIN_SYNC_INTERVAL),
            min_housekeeping_delay=_duration(environ.get("HIVECAT_MIN_HOUSEKEEPING_DELAY", ""),
                                             DEFAULT_MIN_HOUSEKEEPING_DELAY),
            min_scan_interval=_duration(environ.get("HIVECAT_MIN_SCAN_INTERVAL", ""), DEFAULT_MIN_SCAN_INTERVAL),
            exact_namespaces=environ.get(EXACT_NAMESPACES_ENV) == "true",
            workers=_count(environ.get("HIVECAT_WORKERS", ""), DEFAULT_WORKERS),
            local_copies=_count(environ.get("HIVECAT_LOCAL_COPIES", ""), DEFAULT_LOCAL_COPIES),
            startup_spread_seconds=_seconds(environ.get("HIVECAT_STARTUP_SPREAD_SECONDS", ""),
                                            DEFAULT_STARTUP_SPREAD_SECONDS, zero=True),
        )


def _seconds(text: str, default: float, zero: bool = False) -> float:
    """A positive number of seconds (or 0, where `zero` allows it); anything else (unset, bad): the default."""
    try:
        value = float(text)
    except ValueError:
        return default
    return value if 0 < value < 86400 or (zero and value == 0) else default


def _count(text: str, default: int) -> int:
    """A whole number from 1 to 64; anything else (unset, bad) falls back to the default."""
    try:
        value = int(text)
    except ValueError:
        return default
    return value if 1 <= value <= 64 else default


def _duration(text: str, default: float) -> float:
    """Seconds from a Go duration (1m, 1h30m) or a number, as _seconds bounds them; anything else: the default."""
    seconds = duration_seconds(text.strip())
    return _seconds(text if seconds is None else str(seconds), default)


def _port(text: str) -> int:
    """A TCP port; anything else (unset, bad, out of range) is 0: no server."""
    try:
        value = int(text)
    except ValueError:
        return 0
    return value if 0 < value < 65536 else 0


def _list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _state_home(environ: Mapping[str, str]) -> Path:
    """$XDG_STATE_HOME, else ~/.local/state (XDG base directory spec: relative values are ignored)."""
    xdg = environ.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg)
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".local" / "state"


@functools.cache
def config() -> OperatorConfig:
    """The process's configuration, from os.environ at first use."""
    return OperatorConfig.from_environ()
