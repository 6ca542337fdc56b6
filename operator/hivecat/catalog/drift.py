""""Wrong FS" drift of a catalog: locations that still name a storage cluster's old filesystem (an alias, or a
filesystem it had before), found and repaired through the location engine and nothing else.

A scan is one dry run per drift source (source -> the cluster's filesystem) over the whole catalog; a repair
is one journaled, undoable relocation per source that has drift. Both ask the engine to leave refused tables
(Iceberg, ACID) alone and count them (skip_refused), and never to force a transactional table: a metastore
rewrite cannot move their data consistently. No kopf, no Kubernetes: the operator's handlers call these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hivecat.catalog.base import Catalog
from hivecat.catalog.model import Refusal, RelocationRefused, RelocationReport, RelocationRequest, Scope

SAMPLE_SIZE = 10
LOCKED = "locked"   # the engine's refusal reason while another run holds the catalog's lock
TOO_LONG = "too-long"


class RepairDeferred(Exception):
    """Another run holds the catalog's lock: nothing was written by the step that met it; try again later.

    `runs`: relocations this repair finished before it met the lock (they stand, journaled and undoable).
    Raised by scan_drift too, where the engine's dry run waits on the same lock (SQL catalogs)."""

    def __init__(self, message: str, runs: tuple[RelocationReport, ...] = ()):
        super().__init__(message)
        self.message = message
        self.runs = runs


@dataclass(frozen=True)
class SourceScan:
    """The engine's dry run of one drift source. `blocked`: why the engine refused the source as a whole
    (a new value too long for its column, a character the metastore cannot store, overlapping prefixes...);
    its report then counts nothing."""

    source: str
    target: str
    report: RelocationReport
    blocked: tuple[Refusal, ...] = ()

    @property
    def drifted(self) -> int:
        """Locations a repair would rewrite."""
        return self.report.rewritten

    @property
    def counts(self) -> dict[str, int]:
        """ObjectKind value -> locations a repair would rewrite (kinds with none left out)."""
        return {kind.value: c.rewritten for kind, c in sorted(self.report.counts.items(), key=lambda kv: kv[0].value)
                if c.rewritten}

    @property
    def refused(self) -> int:
        """Locations under the source that a repair leaves alone: in Iceberg/ACID tables, plus each value
        named as too long (the engine names at most a few, so a blocked source counts at least that many)."""
        in_tables = sum(c.refused for c in self.report.counts.values())
        return in_tables + sum(1 for r in self.blocked if r.reason == TOO_LONG)


@dataclass(frozen=True)
class DriftScan:
    scans: tuple[SourceScan, ...]
    refusals: tuple[Refusal, ...]   # every source's, each once: per table (Iceberg, ACID) and per blocked source

    @property
    def drifted(self) -> int:
        return sum(s.drifted for s in self.scans)

    @property
    def counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for scan in self.scans:
            for kind, n in scan.counts.items():
                total[kind] = total.get(kind, 0) + n
        return dict(sorted(total.items()))

    @property
    def refused(self) -> int:
        return sum(s.refused for s in self.scans)

    @property
    def blocked(self) -> tuple[Refusal, ...]:
        return tuple(r for s in self.scans for r in s.blocked)

    @property
    def sample(self) -> tuple[tuple[str, str], ...]:
        """A few (old, new) pairs a repair would write, first sources first."""
        pairs = [pair for s in self.scans for pair in s.report.sample]
        return tuple(pairs[:SAMPLE_SIZE])

    def of(self, source: str) -> SourceScan | None:
        return next((s for s in self.scans if s.source == source), None)


@dataclass(frozen=True)
class DriftRepair:
    runs: tuple[RelocationReport, ...]      # one relocation run per source that had drift, in source order
    refusals: tuple[Refusal, ...] = ()      # why sources with drift were not repaired (blocked, or refused)

    @property
    def run_ids(self) -> tuple[str, ...]:
        return tuple(r.run_id for r in self.runs)

    @property
    def rewritten(self) -> int:
        return sum(r.rewritten for r in self.runs)

    @property
    def failed(self) -> int:
        """API backends: writes the service refused or ignored (reported, never retried blindly)."""
        return sum(r.failed for r in self.runs)


def _request(source: str, target: str, *, dry_run: bool) -> RelocationRequest:
    # Whole catalog, refused tables skipped and counted, ACID never forced, no scheme change.
    return RelocationRequest(old_prefix=source, new_prefix=target, scope=Scope(), skip_refused=True,
                             force_acid=False, allow_scheme_change=False, dry_run=dry_run)


def _deferred(catalog: Catalog, doing: str, runs: tuple[RelocationReport, ...] = ()) -> RepairDeferred:
    return RepairDeferred(f"another relocation of catalog {catalog.name} holds its lock, so the drift {doing} "
                          "waits and is tried again later", runs)


def _is_locked(refused: RelocationRefused) -> bool:
    return any(r.reason == LOCKED for r in refused.refusals)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _of_source(source: str, refusals: Iterable[Refusal]) -> tuple[Refusal, ...]:
    """Refusals of a whole run, saying which drift source they concern (the engine's name no source)."""
    return tuple(Refusal(r.reason, f"drift source {source}: {r.message}", r.table, r.option) for r in refusals)


def _scan_source(catalog: Catalog, source: str, target: str) -> SourceScan:
    try:
        return SourceScan(source, target, catalog.relocate(_request(source, target, dry_run=True)))
    except RelocationRefused as exc:
        if _is_locked(exc):
            raise _deferred(catalog, "scan") from None
        empty = RelocationReport("dry-run", catalog.name, source, target, True, status="dry-run")
        return SourceScan(source, target, empty, _of_source(source, exc.refusals))


def _refusals(scans: Iterable[SourceScan]) -> tuple[Refusal, ...]:
    seen: dict[tuple[str, str | None, str], Refusal] = {}
    for scan in scans:
        for refusal in (*scan.report.refusals, *scan.blocked):
            seen.setdefault((refusal.reason, refusal.table, refusal.message), refusal)
    return tuple(seen.values())


def scan_drift(catalog: Catalog, sources: Sequence[str], target: str) -> DriftScan:
    """Dry-run every drift source -> target over the whole catalog; writes nothing.

    A source with nothing under it is a zero scan; one the engine refuses as a whole is `blocked`.
    Raises RepairDeferred when the engine's dry run meets another run's lock (SQL catalogs)."""
    scans = tuple(_scan_source(catalog, source, target) for source in _unique(sources))
    return DriftScan(scans, _refusals(scans))


def repair_drift(catalog: Catalog, sources: Sequence[str], target: str, *,
                 scan: DriftScan | None = None) -> DriftRepair:
    """Relocate each drift source that has drift to target: one journaled run per such source.

    `scan`: a scan just taken (e.g. the one that decided to repair); sources it does not cover, or covers for
    another target, are dry-run first. A source without drift runs nothing (no empty journal runs).
    Raises RepairDeferred when another run holds the catalog's lock; runs finished before stay done."""
    runs: list[RelocationReport] = []
    refusals: list[Refusal] = []
    for source in _unique(sources):
        current = scan.of(source) if scan is not None else None
        if current is None or current.target != target:
            current = _scan_with(catalog, source, target, tuple(runs))
        if current.blocked:
            refusals.extend(current.blocked)
            continue
        if not current.drifted:
            continue
        try:
            runs.append(catalog.relocate(_request(source, target, dry_run=False)))
        except RelocationRefused as exc:
            if _is_locked(exc):
                raise _deferred(catalog, "repair", tuple(runs)) from None
            refusals.extend(_of_source(source, exc.refusals))
    return DriftRepair(tuple(runs), tuple(refusals))


def _scan_with(catalog: Catalog, source: str, target: str, runs: tuple[RelocationReport, ...]) -> SourceScan:
    """A repair's own dry run of a source: meeting the lock defers the repair, keeping the runs it finished."""
    try:
        return _scan_source(catalog, source, target)
    except RepairDeferred as exc:
        raise _deferred(catalog, "repair", runs) from exc
