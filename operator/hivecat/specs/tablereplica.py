"""A TableReplica's spec as frozen dataclasses: parsed from the CR body (a Mapping, as kopf gives it),
defaults applied as the CRD applies them, and the CRD's schema and CEL rules checked again (a body can reach
the operator without them). The partition filter is only kept here: its grammar depends on the table's
partition-key types, so the planner checks it against the catalog. No I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from hivecat import reasons
from hivecat.durations import duration_seconds
from hivecat.kinds import TABLE_REPLICA
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.fields import choice, flag, mapping, opt_str, whole
from hivecat.specs.schema import check_spec
from hivecat.timestamps import parse_rfc3339

__all__ = ["CopySettings", "FailoverSettings", "TableReplicaSpec", "parse_table_replica", "parse_duration", "SpecInvalid"]

DEFAULT_INTERVAL: Final = 3600.0  # a TableReplica without schedule.interval syncs hourly
DEFAULT_READINESS_INTERVAL: Final = 900.0  # its readiness for an unplanned failover is measured every 15 minutes
DEFAULT_HOUSEKEEPING_DELAY: Final = 3 * 24 * 3600.0  # copies of dropped partitions kept 3 days (as circus-train)
MIN_INTERVAL: Final = 1.0
MAX_INTERVAL: Final = 30 * 24 * 3600.0
MAX_SECONDARIES: Final = 16
VERIFY_MODES: Final = ("size", "checksum")
PLANNED: Final = "Planned"      # the primary answers: each copy is checked against its original
UNPLANNED: Final = "Unplanned"  # the primary does not answer and is never read: each copy is checked from itself
FAILOVER_KINDS: Final = (PLANNED, UNPLANNED)
PRIMARY_WINS: Final = "Primary"      # spec.failback.divergedWinner: a diverged unit points back at its original
SECONDARY_WINS: Final = "Secondary"  # ... at the secondary's version, copied to a new directory on the primary
ENGINES: Final = ("auto", "spark", "local")
_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_IDENTIFIER: Final = re.compile(r"[A-Za-z0-9_]{1,128}")


@dataclass(frozen=True)
class CopySettings:
    verify: str = "size"  # size | checksum: how the copy engine and the operator's verification compare files
    parallelism: int | None = None
    bandwidth_mbps: int | None = None
    engine: str = "auto"  # auto | spark | local


@dataclass(frozen=True)
class FailoverSettings:
    """How a change of spec.active to a secondary switches the table (spec.failover)."""

    kind: str = PLANNED
    # Unplanned: the recovery point (status.replicas[].recoveryPoint of the target) the author accepts to lose
    # everything changed after; refused when the target's is older, or when this value is older than the last switch
    # (a value left from an earlier failover)
    accept_recovery_point: datetime | None = None
    leave_behind: bool = False  # Unplanned: units without a whole recorded copy stay on the primary


@dataclass(frozen=True)
class TableReplicaSpec:
    name: str
    namespace: str
    catalog: str  # spec.catalogRef.name: a HiveCatalog in the same namespace
    database: str
    table: str
    partition_filter: str | None
    most_recent: int | None
    primary: str | None  # None: the cluster holding the table's location (resolved against the registry)
    secondaries: tuple[str, ...]
    active: str | None  # None: the primary
    interval: float  # seconds between the starts of two syncs
    copy: CopySettings
    suspend: bool
    housekeeping_delay: float = DEFAULT_HOUSEKEEPING_DELAY  # seconds a copy of a gone unit is kept, marked
    failover: FailoverSettings = FailoverSettings()
    readiness_interval: float = DEFAULT_READINESS_INTERVAL  # seconds between readiness checks (act/readiness.py)
    diverged_winner: str | None = None  # spec.failback.divergedWinner; None: a failback holds diverged units
    uid: str = ""  # metadata.uid: the owner its copies record (a TableReplica made again is another owner)

    @property
    def qualified_table(self) -> str:
        return f"{self.database}.{self.table}"

    def clusters(self) -> tuple[str, ...]:
        """Every ClusterStorage the spec names, primary first."""
        named = ((self.primary,) if self.primary else ()) + self.secondaries
        return named + ((self.active,) if self.active and self.active not in named else ())


def parse_table_replica(body: Mapping[str, Any]) -> TableReplicaSpec:
    """The typed spec of a TableReplica body, or SpecInvalid naming the first problem."""
    meta = body.get("metadata") or {}
    spec = mapping(body.get("spec"), "spec")
    catalog = opt_str(mapping(spec.get("catalogRef"), "spec.catalogRef"), "name", "spec.catalogRef")
    if not catalog:
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.catalogRef.name is required: the HiveCatalog, in the same "
                                          "namespace, that holds the table")
    database = _identifier(spec, "database", "default")
    table = _identifier(spec, "table", None)
    partitions = mapping(spec.get("partitions"), "spec.partitions")
    partition_filter = opt_str(partitions, "filter", "spec.partitions") or None
    most_recent = whole(partitions, "mostRecent", "spec.partitions", 0, 1, 2**31 - 1) or None
    primary = _cluster(spec, "primary")
    secondaries = _secondaries(spec.get("secondaries"))
    active = _cluster(spec, "active")
    if primary is not None and primary in secondaries:
        raise SpecInvalid(reasons.INVALID_CLUSTERS, f"spec.primary {primary} must not also be listed in spec.secondaries")
    if active is not None and active != primary and active not in secondaries:
        raise SpecInvalid(reasons.INVALID_CLUSTERS, f"spec.active {active} must name spec.primary or one of "
                                             "spec.secondaries")
    schedule = mapping(spec.get("schedule"), "spec.schedule")
    interval = schedule.get("interval")
    copy = mapping(spec.get("copy"), "spec.copy")
    delay = mapping(spec.get("housekeeping"), "spec.housekeeping").get("delay")
    parsed = TableReplicaSpec(
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or "default"),
        catalog=catalog,
        database=database,
        table=table,
        partition_filter=partition_filter,
        most_recent=most_recent,
        primary=primary,
        secondaries=secondaries,
        active=active,
        interval=DEFAULT_INTERVAL if interval is None else parse_duration(interval, "spec.schedule.interval"),
        copy=CopySettings(
            verify=choice(copy, "verify", VERIFY_MODES, "size", "spec.copy"),
            parallelism=whole(copy, "parallelism", "spec.copy", 0, 1, 2**31 - 1) or None,
            bandwidth_mbps=whole(copy, "bandwidthMBps", "spec.copy", 0, 1, 2**31 - 1) or None,
            engine=choice(copy, "engine", ENGINES, "auto", "spec.copy"),
        ),
        suspend=flag(spec, "suspend", "spec", False),
        housekeeping_delay=DEFAULT_HOUSEKEEPING_DELAY if delay is None
        else parse_duration(delay, "spec.housekeeping.delay", reasons.INVALID_FIELD),
        failover=_failover(spec.get("failover")),
        diverged_winner=choice(mapping(spec.get("failback"), "spec.failback"), "divergedWinner",
                               (PRIMARY_WINS, SECONDARY_WINS), "", "spec.failback") or None,
        readiness_interval=DEFAULT_READINESS_INTERVAL if schedule.get("readinessInterval") is None
        else parse_duration(schedule.get("readinessInterval"), "spec.schedule.readinessInterval"),
        uid=str(meta.get("uid") or ""),
    )
    check_spec(TABLE_REPLICA.kind, body)  # what the checks above leave to the CRD's schema
    return parsed


def parse_duration(value: Any, where: str, reason: str = reasons.INVALID_SCHEDULE) -> float:
    """Seconds of a Go-style duration such as 15m, 1h30m or 90s, within MIN_INTERVAL..MAX_INTERVAL."""
    seconds = duration_seconds(value) if isinstance(value, str) else None
    if seconds is None:
        raise SpecInvalid(reason, f"{where} {str(value)[:40]!r} is not a duration such as 15m, 1h30m "
                                             "or 90s")
    if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
        raise SpecInvalid(reason, f"{where} {value} is outside 1s to 30 days (720h)")
    return seconds


def _failover(value: Any) -> FailoverSettings:
    raw = mapping(value, "spec.failover")
    kind = choice(raw, "kind", FAILOVER_KINDS, PLANNED, "spec.failover")
    text = opt_str(raw, "acceptRecoveryPoint", "spec.failover")
    accepted = None if text is None else parse_rfc3339(text)
    if text is not None and accepted is None:
        raise SpecInvalid(reasons.INVALID_FIELD, "spec.failover.acceptRecoveryPoint must be a time such as "
                                                 "2026-11-27T10:00:00Z, copied from status.replicas[].recoveryPoint")
    if kind == UNPLANNED and accepted is None:
        raise SpecInvalid(reasons.INVALID_FIELD, "an Unplanned failover needs spec.failover.acceptRecoveryPoint: the "
                                                 "target's status.replicas[].recoveryPoint, the point you accept to "
                                                 "lose what changed after")
    return FailoverSettings(kind, accepted, flag(raw, "leaveBehind", "spec.failover", False))


def _identifier(spec: Mapping[str, Any], field: str, default: str | None) -> str:
    value = opt_str(spec, field, "spec")
    if value is None and default is not None:
        return default
    if not value or not _IDENTIFIER.fullmatch(value):
        raise SpecInvalid(reasons.INVALID_FIELD, f"spec.{field} must be a Hive name of letters, digits and underscores "
                                          "(at most 128)")
    return value.lower()  # Hive keeps database and table names in lower case


def _cluster(spec: Mapping[str, Any], field: str) -> str | None:
    value = opt_str(spec, field, "spec")
    if value is None:
        return None
    if len(value) > 253 or not _NAME.fullmatch(value):
        raise SpecInvalid(reasons.INVALID_FIELD, f"spec.{field} must be the name of a ClusterStorage")
    return value


def _secondaries(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise SpecInvalid(reasons.INVALID_CLUSTERS, "spec.secondaries must list at least one ClusterStorage to copy to")
    if len(value) > MAX_SECONDARIES:
        raise SpecInvalid(reasons.INVALID_CLUSTERS, f"spec.secondaries lists {len(value)} ClusterStorages; at most "
                                             f"{MAX_SECONDARIES}")
    names = tuple(_cluster({"secondaries": item}, "secondaries") or "" for item in value)
    if len(set(names)) != len(names):
        raise SpecInvalid(reasons.INVALID_CLUSTERS, "spec.secondaries must not contain duplicates")
    return names
