"""What catalogs hold and what a relocation asks for and reports. Plain data, no I/O."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

DEFAULT_PARAM_KEYS: tuple[str, ...] = ("path", "avro.schema.url")


class ObjectKind(str, enum.Enum):
    """Every place a metastore keeps a location, one kind per place."""

    CATALOG = "catalog"                       # CTLGS.LOCATION_URI (Hive 3+)
    DATABASE = "database"                     # DBS.DB_LOCATION_URI
    DATABASE_MANAGED = "database_managed"     # DBS.DB_MANAGED_LOCATION_URI (Hive 4)
    TABLE = "table"                           # SDS.LOCATION of a table's storage descriptor
    PARTITION = "partition"                   # SDS.LOCATION of a partition's storage descriptor
    SERDE_PARAM = "serde_param"               # SERDE_PARAMS (e.g. `path` of Spark datasource tables)
    TABLE_PARAM = "table_param"               # TABLE_PARAMS
    PARTITION_PARAM = "partition_param"       # PARTITION_PARAMS
    SKEWED_LOCATION = "skewed_location"       # SKEWED_COL_VALUE_LOC_MAP.LOCATION
    FUNCTION_RESOURCE = "function_resource"   # FUNC_RU.RESOURCE_URI (UDF jars)


@dataclass(frozen=True)
class DatabaseInfo:
    name: str
    location: str | None
    managed_location: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableInfo:
    database: str
    name: str
    location: str | None
    table_type: str | None = None             # MANAGED_TABLE, EXTERNAL_TABLE, VIRTUAL_VIEW, ...
    partition_keys: tuple[str, ...] = ()
    parameters: dict[str, str] = field(default_factory=dict)
    serde_parameters: dict[str, str] = field(default_factory=dict)

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class PartitionInfo:
    database: str
    table: str
    values: tuple[str, ...]
    location: str | None
    parameters: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Scope:
    """Whole catalog (all None), one database, one table, or a table's partitions matching a filter."""

    database: str | None = None
    table: str | None = None
    partition_filter: str | None = None  # HMS get_partitions_by_filter syntax

    def __post_init__(self) -> None:
        if self.table and not self.database:
            raise ValueError("a table scope needs its database")
        if self.partition_filter and not self.table:
            raise ValueError("a partition filter needs a table")


@dataclass(frozen=True)
class RelocationRequest:
    old_prefix: str
    new_prefix: str
    scope: Scope = Scope()
    param_keys: tuple[str, ...] = DEFAULT_PARAM_KEYS  # location-valued keys of SERDE/TABLE/PARTITION_PARAMS
    allow_scheme_change: bool = False
    force_acid: bool = False
    skip_refused: bool = False  # rewrite the rest and count refused objects, instead of refusing the run
    dry_run: bool = False
    chunk_size: int | None = None  # None: one transaction (SQL); rows per chunk otherwise
    # Compare-and-set against what a caller verified: only values exactly equal to one of these move (a unit
    # added, or pointed elsewhere, since the caller read it is left alone and stays under old_prefix). None:
    # every value under old_prefix. Values left alone this way are not counted in the report.
    expected_locations: tuple[str, ...] | None = None


# Notification events of direct (SQL) rewrites: `auto` logs them where a listener logs the metastore's own.
EVENTS_AUTO, EVENTS_ON, EVENTS_OFF = "auto", "on", "off"


@dataclass
class KindCounts:
    rewritten: int = 0   # changed (or, in a dry run, would change)
    skipped: int = 0     # under the old prefix but left alone (e.g. done by an earlier attempt of the run)
    conflicted: int = 0  # changed by someone else between plan and write: reported, never clobbered
    refused: int = 0     # in a refused table (Iceberg, ACID) and left alone because skip_refused was set
    failed: int = 0      # API backends: the service refused the write (other than a concurrent change); not written


@dataclass(frozen=True)
class Refusal:
    """Why an object (or the whole run, when `table` is None) may not be relocated."""

    reason: str    # machine-readable: iceberg, acid, scheme-change, overlap, invalid-uri, not-found, ...
    message: str   # words only: never a CLI flag or a spec field (each front end adds how via `option`)
    table: str | None = None
    option: str | None = None  # the RelocationRequest option (or action: "undo") that would allow it


# Why a table's locations must not be rewritten by a metastore update (Refusal reasons iceberg, acid).
UNSAFE_TABLE_WHY = {
    "iceberg": "is an Iceberg table: its metadata files hold absolute paths that a metastore rewrite cannot "
               "change",
    "acid": "is a transactional (ACID) table: its delta directories and write ids are tied to the location; "
            "allow transactional tables only after moving its data consistently",
}


def unsafe_table_refusal(qualified_name: str, reason: str) -> Refusal:
    """The refusal of one Iceberg or ACID table (allowing ACID tables is the request's force_acid)."""
    return Refusal(reason, f"{qualified_name} {UNSAFE_TABLE_WHY[reason]}", qualified_name,
                   option="force_acid" if reason == "acid" else None)


CHANGED_AFTER_CHECK = "changed-after-check"
EVENTS_NOT_WRITABLE = "notification-log-not-writable"  # the user may not log the metastore's events
ChunkProgress = Callable[[int, int], None]  # (chunks done, chunks total) of a relocation or undo

# A caller's second look, taken after a run's writes and before they are committed where the backend has
# transactions (SQL without a chunk size): what changed since the caller verified the data the new locations
# point at (words; empty: nothing). A location compare-and-set cannot see a file appended to a directory.
Confirm = Callable[[], Sequence[str]]


class RelocationRefused(Exception):
    """The run is refused before any write; every refusal says why."""

    def __init__(self, refusals: list[Refusal]):
        self.refusals = refusals
        super().__init__("; ".join(r.message for r in refusals))


@dataclass
class RelocationReport:
    run_id: str
    catalog: str
    old_prefix: str
    new_prefix: str
    dry_run: bool
    counts: dict[ObjectKind, KindCounts] = field(default_factory=dict)
    sample: list[tuple[str, str]] = field(default_factory=list)  # a few old -> new pairs
    tables_touched: list[str] = field(default_factory=list)      # db.table: refresh these in caching clients
    refusals: list[Refusal] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # API backends: why writes failed or conflicted (first few)
    seconds: float = 0.0
    status: str = "done"  # done | dry-run | undone | partial
    notification_events: int = 0  # events logged in the metastore's notification log (SQL backend)
    notes: list[str] = field(default_factory=list)  # said once: e.g. why no events were logged

    SAMPLE_SIZE = 10

    def count(self, kind: ObjectKind) -> KindCounts:
        return self.counts.setdefault(kind, KindCounts())

    ERRORS_SIZE = 50

    def add_error(self, message: str) -> None:
        if len(self.errors) < self.ERRORS_SIZE:
            self.errors.append(message)

    def add_sample(self, old: str, new: str) -> None:
        if len(self.sample) < self.SAMPLE_SIZE:
            self.sample.append((old, new))

    @property
    def rewritten(self) -> int:
        return sum(c.rewritten for c in self.counts.values())

    @property
    def conflicted(self) -> int:
        return sum(c.conflicted for c in self.counts.values())

    @property
    def failed(self) -> int:
        return sum(c.failed for c in self.counts.values())

    def to_dict(self) -> dict:
        data = asdict(self)
        data["counts"] = {kind.value: asdict(c) for kind, c in sorted(self.counts.items(), key=lambda kv: kv[0].value)}
        data["sample"] = [{"old": o, "new": n} for o, n in self.sample]
        data["rewritten"] = self.rewritten
        data["conflicted"] = self.conflicted
        data["failed"] = self.failed
        return data


@dataclass(frozen=True)
class JournaledRun:
    """One journaled run, as a catalog's history lists it."""

    run_id: str
    catalog: str
    old_prefix: str
    new_prefix: str
    status: str        # planned | running | done | failed | undone
    started_at: str
    finished_at: str | None
    rows: int


# --- replica bookkeeping: parameters of a table or partition, written compare-and-set ------------------

PARTITION_GONE = "partition no longer exists"
TABLE_GONE = "table no longer exists"


@dataclass(frozen=True)
class UnitParams:
    """Parameters to set and keys to remove on one unit: the table itself (partition_values None) or one
    partition, written only while the unit's storage location (SDS.LOCATION) is exactly expected_location
    (None: written whatever the location, e.g. removing bookkeeping of a replica that goes).

    `set` is kept as a tuple of (key, value) pairs, so the unit is immutable (and hashable); a Mapping or
    any iterable of pairs is accepted and converted. A key may not be both set and removed.
    """

    partition_values: tuple[str, ...] | None
    expected_location: str | None
    set: tuple[tuple[str, str], ...] = ()
    remove: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        pairs = tuple(self.set.items() if isinstance(self.set, Mapping) else self.set)
        keys = [key for key, _ in pairs]
        if len(set(keys)) != len(keys):  # the builtin: methods do not see the field of that name
            raise ValueError(f"a key is set twice in {pairs!r}")
        both = set(keys) & set(self.remove)
        if both:
            raise ValueError(f"keys both set and removed: {sorted(both)}")
        if any(not isinstance(k, str) or not k or not isinstance(v, str) for k, v in pairs):
            raise ValueError(f"parameters are non-empty string keys with string values, not {pairs!r}")
        object.__setattr__(self, "set", pairs)
        object.__setattr__(self, "remove", tuple(self.remove))
        if self.partition_values is not None:
            object.__setattr__(self, "partition_values", tuple(self.partition_values))

    @property
    def params(self) -> dict[str, str]:
        return dict(self.set)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the unit touches (set or removed)."""
        return tuple(k for k, _ in self.set) + self.remove

    def conflict(self, location: str | None) -> str | None:
        """Why the unit must not be written when its location is `location` (None: it may)."""
        if self.expected_location is None or location == self.expected_location:
            return None
        return f"location is now {location!r}, expected {self.expected_location!r}"

    def applied(self, current: Mapping[str, str]) -> dict[str, str]:
        """The unit's parameters once this change is made to `current`."""
        removed = set(self.remove)
        return {**{k: v for k, v in current.items() if k not in removed}, **dict(self.set)}


UnitRefusal = tuple[tuple[str, ...] | None, str]  # (partition values, or None for the table; why, in words)


@dataclass(frozen=True)
class ParamsOutcome:
    """What update_unit_params did. written: units that passed the location check and now hold their
    parameters. conflicts: units left alone because their location changed or they no longer exist.
    failed: units the catalog refused for another reason (a value too long for its column or not storable
    in the metastore's character set, a service error); neither kind is retried."""

    written: int
    conflicts: tuple[UnitRefusal, ...] = ()
    failed: tuple[UnitRefusal, ...] = ()
