"""What to do about the metastore's schema: initialize it, upgrade it, leave it, or refuse. Pure: the
caller reads the database (hivecat.catalog.schema_version) and runs the Job (hivecat.workloads.schema_job).

Which schema a Hive release uses: its major.minor with patch 0 (2.3.10 -> 2.3.0, 3.1.3 -> 3.1.0,
4.0.1 -> 4.0.0). That is how Hive names its schema scripts — 3.1.3 ships hive-schema-3.1.0 and its upgrade
chain ends at upgrade-3.0.0-to-3.1.0; 4.0.1 ships hive-schema-4.0.0 and ends at upgrade-4.0.0-beta-1-to-4.0.0
— because patch releases never change the schema. Pre-releases (4.0.0-beta-1) have a schema of their own."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Protocol

from hivecat import reasons

# 4.0.1, 2.3.10, 4.0.0-beta-1, 4.0.0-alpha-2 (Hive's own spellings); nothing else is a Hive version.
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-(alpha|beta|rc)-(\d+))?")
_STAGES = {"alpha": 0, "beta": 1, "rc": 2}
_RELEASE = 3  # a release sorts after its pre-releases


class SchemaStateLike(Protocol):
    """What decide_schema needs of hivecat.catalog.schema_version.SchemaState (kept I/O-free here)."""

    @property
    def has_tables(self) -> bool: ...
    @property
    def version(self) -> str | None: ...
    @property
    def version_rows(self) -> int: ...


def _parse(version: str) -> tuple[int, int, int, int, int] | None:
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        return None
    major, minor, patch, stage, number = match.groups()
    return int(major), int(minor), int(patch), _STAGES[stage] if stage else _RELEASE, int(number or 0)


def schema_version_of(hive_version: str) -> str:
    """The VERSION.SCHEMA_VERSION a Hive release's schematool writes and its metastore expects."""
    match = _VERSION.fullmatch(hive_version.strip())
    if match is None:
        raise ValueError(f"{hive_version!r} is not a Hive version (e.g. 3.1.3 or 4.0.1)")
    major, minor, _patch, stage, _number = match.groups()
    if stage:  # a pre-release's schema is its own: hive-schema-4.0.0-beta-1
        return hive_version.strip()
    return f"{major}.{minor}.0"


@dataclass(frozen=True)
class Init:
    """The database is empty: schematool -initSchema creates the image's schema."""

    kind: ClassVar[str] = "Init"
    to_version: str


@dataclass(frozen=True)
class Upgrade:
    """The schema is older than the image's: schematool -upgradeSchemaFrom from_version."""

    kind: ClassVar[str] = "Upgrade"
    from_version: str
    to_version: str


@dataclass(frozen=True)
class Ready:
    """The schema is the one the image expects: nothing to run."""

    kind: ClassVar[str] = "Ready"
    version: str


@dataclass(frozen=True)
class Refuse:
    """Nothing may run. `reason` is a stable CamelCase condition reason; `message` says what to do."""

    kind: ClassVar[str] = "Refuse"
    reason: str
    message: str


SchemaDecision = Init | Upgrade | Ready | Refuse


def decide_schema(state: SchemaStateLike, hive_version: str) -> SchemaDecision:
    """Init only on a database without any table; Upgrade only from a recorded, older version."""
    try:
        wanted = schema_version_of(hive_version)
    except ValueError as exc:
        return Refuse(reasons.INVALID_HIVE_VERSION, f"spec.metastore.hiveVersion: {exc}; set it to the Hive release "
                                            "the metastore image runs")
    if state.version_rows > 1:
        return Refuse(reasons.AMBIGUOUS_VERSION,
                      f"the metastore database's VERSION table holds {state.version_rows} rows, so its schema "
                      "version is ambiguous; Hive keeps exactly one. Find out which version the schema really "
                      "is (compare its tables with Hive's schema scripts), keep only that row, and the operator "
                      "will carry on")
    if state.version is None or state.version_rows == 0:
        if not state.has_tables:
            return Init(wanted)
        return Refuse(reasons.SCHEMA_WITHOUT_VERSION,
                      "the metastore database holds tables but no schema version (an empty or missing VERSION "
                      "table): it was made by a metastore with datanucleus.schema.autoCreateAll, or it is "
                      "damaged or not a metastore. Hive's schema tool cannot upgrade such a schema and must not "
                      "initialize over it. Point the catalog at an empty database, or, if you know which Hive "
                      "schema it holds and that it matches Hive's scripts, record it in the VERSION table")
    found = _parse(state.version)
    if found is None:
        return Refuse(reasons.SCHEMA_VERSION_UNKNOWN,
                      f"the metastore database records schema version {state.version!r}, which is not a Hive "
                      "schema version; the operator will not run the schema tool on it. Check the VERSION table")
    target = _parse(wanted)
    assert target is not None  # schema_version_of only returns parseable versions
    if found == target:
        return Ready(state.version.strip())
    if found < target:
        return Upgrade(state.version.strip(), wanted)
    return Refuse(reasons.SCHEMA_NEWER_THAN_IMAGE,
                  f"the metastore database holds schema {state.version.strip()}, newer than the {wanted} that "
                  f"Hive {hive_version.strip()} (spec.metastore.hiveVersion) uses; a downgrade is refused. Use a "
                  f"metastore image of Hive {_release_line(state.version.strip())} or later and set hiveVersion "
                  "to match")


def _release_line(schema_version: str) -> str:
    """3.1.0 -> 3.1; a pre-release schema names itself."""
    match = _VERSION.fullmatch(schema_version)
    if match is None or match.group(4):
        return schema_version
    return f"{match.group(1)}.{match.group(2)}"
