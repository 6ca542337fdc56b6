"""The copier: a plan in, a run summary out (DistCp -update, atomic per unit, verified, resumable).

For each unit: list both sides, read the target unit's current manifest, decide which files are up to
date (size and the source mtime recorded in the manifest match; with --verify checksum, content
checksums match), copy the rest into `.hivecat-staging-<run>` beside the target, verify, and commit
(see commit.py, which verifies the staged files again just before the swap). Up-to-date files are
carried into the staged unit (hard links on local disks) so the committed unit is whole. Nothing is
ever written or deleted under a source. Staging belongs to its run, which holds a lease on it
(staging.py): the staging of dead runs is removed first, that of live runs (e.g. copying a sibling
partition right now) is left alone; a rerun copies only what is missing. A target unit whose manifest
cannot be used (unreadable, too large, nested too deep) fails alone, and is neither trusted nor
overwritten; so does one that belongs to another owner (owner.py), and one whose manifest changed between
the listing and the commit (another run committed into it). A local unit whose directory is, or passes
through, a symbolic link fails alone too, naming the link: nothing local is reached through one
(local_paths.py).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyarrow import fs as pafs

from hivecat.copy import commit, staging
from hivecat.copy.engines import Engine, choose_engine
from hivecat.copy.errors import CopyInputError
from hivecat.copy.listing import FileStat, FoundManifest, ManifestUnreadable, list_files, read_manifest
from hivecat.copy.local_paths import LinkRefused
from hivecat.copy.manifest import FileEntry, RecordedFiles, UnitManifest, fingerprint, recorded_entry
from hivecat.copy.owner import ownership
from hivecat.copy.plan import CopyPlan, Unit
from hivecat.copy.storage import Location, Storage
from hivecat.copy.summary import DONE, FAILED, CopySummary, UnitResult
from hivecat.copy.transfer import FileResult, FileTask, TransferOptions, hash_file

# (files done, files total, bytes done, bytes total); the totals grow as windows of units are decided
ProgressCallback = Callable[[int, int, int, int], None]

# A window of units is decided, copied and committed before the next is decided: at most this many units, and
# the window closes early once its listings hold WINDOW_FILES files (a run's memory is a window's, whatever the
# plan's size: benchmarks/distcp_scale.py reports the peak). DECIDE_BATCH: units decided between those checks.
WINDOW_UNITS = 4096
WINDOW_FILES = 200_000
DECIDE_BATCH = 256


@dataclass(frozen=True)
class CopyOptions:
    verify: str = "size"                 # "size" | "checksum"
    delete: bool = False                 # remove target files absent from the source (inside units only)
    dry_run: bool = False
    parallelism: int | None = None
    bandwidth: float | None = None       # bytes per second, per task
    transfer_overrides: dict = field(default_factory=dict)  # e.g. S3 multipart sizes (tests)


@dataclass
class UnitWork:
    """What one unit needs: decided from both listings and the target's manifest."""

    index: int
    unit: Unit
    staging: Location
    source_files: dict[str, FileStat] = field(default_factory=dict)
    target_files: dict[str, FileStat] = field(default_factory=dict)
    found: FoundManifest | None = None                      # the target's manifest, current or not
    manifest: RecordedFiles | None = None                   # the target's current manifest entries
    adopting: bool = False                                  # an ownerless copy taken over (owner.py)
    not_owned: str | None = None                            # why the unit is not this run's to write
    to_copy: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)      # in listing order
    extras: list[str] = field(default_factory=list)          # in the target only
    checksums: dict[str, str] = field(default_factory=dict)  # computed while deciding
    result: UnitResult | None = None

    def needs_commit(self, delete: bool) -> bool:
        return bool(self.to_copy) or (delete and bool(self.extras)) or self.manifest is None or self.adopting


def root_refusal(root: Location, exc: LinkRefused) -> str:
    """A unit's failure when its directory (`root`, source or target) is or passes through a link."""
    return f"{root.uri}: the unit's directory {exc.strerror}"


def link_refusal(storage: Storage, root: Location) -> str | None:
    """root_refusal when `root` is a local directory that is or passes through a link now; else None."""
    if root.scheme != "file":
        return None
    try:
        storage.filesystem(root).get_file_info(root.path)
    except LinkRefused as exc:
        return root_refusal(root, exc)
    except OSError:
        return None  # not this check's to report: validation says what else is wrong
    return None


def new_run_id() -> str:
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class _Progress:
    """The run's progress across windows: each window's engine reports its own files; the callback gets the
    run's so far."""

    def __init__(self, callback: ProgressCallback | None) -> None:
        self.callback = callback
        self.files_total = self.bytes_total = 0  # of the windows given to an engine so far

    def window(self, tasks: list[FileTask]) -> Callable[[int, int], None] | None:
        files_before, bytes_before = self.files_total, self.bytes_total  # the earlier windows: all done
        self.files_total += len(tasks)
        self.bytes_total += sum(t.size for t in tasks if not t.carry)
        if self.callback is None:
            return None
        callback = self.callback

        def report(files: int, size: int) -> None:
            callback(files_before + files, self.files_total, bytes_before + size, self.bytes_total)

        return report


class Copier:
    def __init__(self, plan: CopyPlan, options: CopyOptions = CopyOptions(), storage: Storage | None = None,
                 engine: Engine | str = "auto", run_id: str | None = None) -> None:
        self.plan, self.options = plan, options
        self.storage = storage or Storage()
        self.engine = engine
        self.run_id = run_id or new_run_id()
        self.parallelism = options.parallelism or 8
        self._refused_roots: dict[int, str] = {}  # unit index -> why its directory cannot be used

    # --- input checks: refuse before anything is written ------------------------------------------

    def validate(self) -> None:
        """Refuse the run (CopyInputError) on bad input: the first unit in plan order that has some. A unit whose
        local directory is or passes through a link fails alone, when it is decided; the other units go on.
        Each target bucket is checked once; units are checked side by side where a store is involved, as they
        are decided (two round trips a unit, which one after another add up to minutes at 100,000 units)."""
        self._refused_roots = {}
        units = self.plan.units
        for bucket in sorted({u.target.authority for u in units if u.target.is_object_store}):
            self._require(Location("s3", bucket, bucket), "target bucket", pafs.FileType.Directory, must_exist=True)
        workers = self._unit_workers(units)
        if workers < 2:
            self._note_refusals(map(self._unit_refusal, units))  # lazily: the first bad unit ends the checks
            return
        with ThreadPoolExecutor(workers, thread_name_prefix="hivecat-validate") as pool:
            try:
                self._note_refusals(pool.map(self._unit_refusal, units))
            except CopyInputError:
                pool.shutdown(wait=False, cancel_futures=True)
                raise

    def _unit_refusal(self, unit: Unit) -> str | CopyInputError | None:
        """Why `unit` cannot run: bad input (the run's refusal), a link (the unit's own failure), or None."""
        try:
            self._require(unit.source, "source", pafs.FileType.Directory, must_exist=True)
            self._require(unit.target, "target", pafs.FileType.Directory, must_exist=False)
        except LinkRefused as exc:
            return self._link_failure(unit, exc)
        except CopyInputError as exc:
            return exc
        return None

    def _note_refusals(self, outcomes: Iterable[str | CopyInputError | None]) -> None:
        for index, outcome in enumerate(outcomes):
            if isinstance(outcome, CopyInputError):
                raise outcome
            if outcome is not None:
                self._refused_roots[index] = outcome

    @staticmethod
    def _link_failure(unit: Unit, exc: LinkRefused) -> str:
        inside_source = unit.source.contains(Location("file", "", exc.filename or ""))
        return root_refusal(unit.source if inside_source else unit.target, exc)

    def _require(self, location: Location, role: str, kind: pafs.FileType, must_exist: bool) -> None:
        try:
            info = self.storage.filesystem(location).get_file_info(location.path)
        except LinkRefused:
            raise
        except OSError as exc:
            raise CopyInputError(f"cannot read {role} {location.uri}: {exc}") from None
        if info.type == pafs.FileType.NotFound:
            if must_exist:
                raise CopyInputError(f"{role} {location.uri} does not exist")
        elif info.type != kind:
            raise CopyInputError(f"{role} {location.uri} is not a directory")

    # --- deciding -----------------------------------------------------------------------------------

    def _staging(self, unit: Unit) -> Location:
        return staging.staging_root(unit.target.parent, self.run_id).child(unit.target.name)

    def decide(self, index: int, unit: Unit) -> UnitWork:
        work = UnitWork(index, unit, self._staging(unit))
        work.result = UnitResult(unit.id, unit.source.uri, unit.target.uri)
        if index in self._refused_roots:
            return self._fail(work, self._refused_roots[index])
        try:
            return self._decide(work)
        except LinkRefused as exc:  # the unit's directory: found when it is opened, whatever validate saw
            return self._fail(work, self._link_failure(unit, exc))
        except (OSError, RecursionError) as exc:  # one unit's unreadable tree fails that unit, not the run
            return self._fail(work, f"cannot list the unit: {type(exc).__name__}: {exc}")

    def _decide(self, work: UnitWork) -> UnitWork:
        unit = work.unit
        source_fs, target_fs = self.storage.filesystem(unit.source), self.storage.filesystem(unit.target)
        work.source_files = list_files(source_fs, unit.source)
        refused = getattr(work.source_files, "refused", {})
        if refused:  # symbolic links, keys that leave the unit: the unit fails before anything is staged
            path, why = min(refused.items())
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            return self._fail(work, f"{path}: {why}{more}")
        missing = [p for p in unit.expected_files if p not in work.source_files]
        if missing:
            return self._fail(work, f"expected files missing in the source: {', '.join(sorted(missing))}")
        work.target_files = list_files(target_fs, unit.target)
        try:  # a manifest written after the listing is caught before the commit (_changed_since_decided)
            work.found = found = read_manifest(target_fs, unit.target) if work.target_files.has_manifest else None
        except ManifestUnreadable as exc:
            return self._fail(work, str(exc))
        owned = ownership(unit.target.uri, self.plan.owner, found is not None, found and found.owner,
                          lambda: fingerprint(found.recorded), len(work.target_files), unit.adopt)
        if owned.refusal is not None:  # before anything is compared: nothing of it is copied, carried or deleted
            work.not_owned = owned.refusal
            return self._fail(work, owned.refusal)
        work.adopting = owned.adopting
        if found is not None and found.is_current(work.target_files):
            work.manifest = found.recorded
        source, target = work.source_files, work.target_files
        if self.options.verify == "checksum":
            work.checksums = self._checksums_if_equal(
                unit, [p for p, stat in source.items() if p in target and target[p].size == stat.size])
            work.up_to_date = [p for p in source if p in work.checksums]
        else:  # a current manifest's entries are all in the target with their size (current_manifest)
            recorded = work.manifest or {}
            work.up_to_date = [p for p, (size, mtime_ns) in source.items()
                               if (entry := recorded.get(p)) is not None
                               and entry["size"] == size and entry["source_mtime_ns"] == mtime_ns]
        # a no-change rerun over tens of thousands of files ends here: no sets, no sorting
        if len(work.up_to_date) < len(source):
            fresh = set(work.up_to_date)
            work.to_copy = sorted(p for p in source if p not in fresh)
        if len(target) > len(work.up_to_date):  # else the target holds the up-to-date files alone
            work.extras = sorted(p for p in target if p not in source)
        return work

    def _decide_all(self, units: Sequence[Unit], first: int) -> list[UnitWork]:
        """These units (the first at plan index `first`) decided, in plan order; side by side where a store is
        involved (each is a few listings and a manifest read: on an object store, round trips that would add
        up to hours for 100,000 units one after another)."""
        workers = self._unit_workers(units)
        if workers < 2:
            return [self.decide(first + i, unit) for i, unit in enumerate(units)]
        with ThreadPoolExecutor(workers, thread_name_prefix="hivecat-decide") as pool:
            return list(pool.map(self.decide, range(first, first + len(units)), units))

    def _unit_workers(self, units: Sequence[Unit]) -> int:
        """How many units to decide or commit at once: one at a time when every side is a local disk (there
        the work is Python's own, and threads only contend for the interpreter: measured slower), else up to
        `parallelism` (round trips to a store wait side by side)."""
        remote = any(u.source.scheme != "file" or u.target.scheme != "file" for u in units)
        return min(self.parallelism, len(units)) if remote else 1

    def _checksums_if_equal(self, unit: Unit, paths: list[str]) -> dict[str, str]:
        """Checksums of the files whose content is the same on both sides."""
        source_fs, target_fs = self.storage.filesystem(unit.source), self.storage.filesystem(unit.target)

        def both(path: str) -> tuple[str, str, str]:
            return path, hash_file(source_fs, unit.source.child(path).path), \
                hash_file(target_fs, unit.target.child(path).path)

        with ThreadPoolExecutor(self.parallelism) as pool:
            return {p: s for p, s, t in pool.map(both, paths) if s == t}

    @staticmethod
    def _fail(work: UnitWork, reason: str) -> UnitWork:
        work.result.status, work.result.reason = FAILED, reason
        return work

    # --- copying ------------------------------------------------------------------------------------

    def tasks(self, work: UnitWork) -> list[FileTask]:
        unit = work.unit
        tasks = [FileTask(work.index, p, unit.source.child(p), work.staging.child(p), s.size, s.mtime_ns)
                 for p in work.to_copy for s in [work.source_files[p]]]
        if not unit.target.is_object_store:  # objects that stay are already in place on object stores
            kept = work.up_to_date + ([] if self.options.delete else work.extras)
            tasks += [FileTask(work.index, p, unit.target.child(p), work.staging.child(p), s.size, s.mtime_ns,
                               carry=True)
                      for p in kept for s in [work.target_files[p]]]
        return tasks

    def run(self, progress: ProgressCallback | None = None) -> CopySummary:
        """Units are decided, copied and committed a window at a time, in plan order (`_windows`): a run holds
        one window's listings and file tasks, not the plan's, and starts copying once its first window is
        decided. The summary lists every unit."""
        began, started_at = time.monotonic(), _now()
        self.validate()
        summary = CopySummary(self.run_id, "", self.options.verify, self.options.dry_run, self.options.delete,
                              started_at)
        engine = self.engine if not isinstance(self.engine, str) else None
        counter = _Progress(progress)
        keeper = staging.LeaseKeeper(self.storage, (), self.run_id)
        held: dict[tuple[str, str, str], Location] = {}  # the staging parents of this run so far
        try:
            with keeper:
                for decided, works in self._windows():
                    pending = [w for w in works if w.result.status != FAILED and w.needs_commit(self.options.delete)]
                    tasks = [t for w in pending for t in self.tasks(w)]
                    if engine is None and pending:
                        engine = self._auto_engine(tasks, decided)
                    if not self.options.dry_run and pending:
                        self._hold_staging(keeper, held, pending)
                        self._copy_and_commit(engine, pending, tasks, counter)
                    committing = {work.index for work in pending}  # by index: a unit's work compares by value, slowly
                    for work in works:
                        self._count(work, work.index in committing)
                        summary.units.append(work.result)
        finally:
            for parent in held.values():
                commit.remove_tree(self.storage, staging.staging_root(parent, self.run_id))
        summary.engine = (engine or choose_engine(self.engine, 0, 0, self.options.parallelism)).name
        summary.seconds = round(time.monotonic() - began, 3)
        return summary

    def _windows(self) -> Iterator[tuple[int, list[UnitWork]]]:
        """(units decided so far, the works of the next window), in plan order. A window closes at WINDOW_UNITS
        units or WINDOW_FILES listed files, whichever comes first, so that its memory stays bounded whatever the
        units hold; units are decided DECIDE_BATCH at a time (side by side on object stores)."""
        units = self.plan.units
        works: list[UnitWork] = []
        files = 0
        for start in range(0, len(units), DECIDE_BATCH):
            batch = self._decide_all(units[start:start + DECIDE_BATCH], start)
            works += batch
            files += sum(len(w.source_files) + len(w.target_files) for w in batch)
            if len(works) >= WINDOW_UNITS or files >= WINDOW_FILES:
                yield start + len(batch), works
                works, files = [], 0
        if works:
            yield len(units), works

    def _auto_engine(self, tasks: list[FileTask], decided: int) -> Engine:
        """The engine, chosen with the first window that has units to commit; for `auto`, by what the whole plan
        is likely to copy: the files to copy found so far, scaled from the units decided to the plan's (a plan's
        units are a table's partitions, alike in shape)."""
        scale = len(self.plan.units) / decided
        to_copy = [t for t in tasks if not t.carry]
        return choose_engine(self.engine, int(len(to_copy) * scale), int(sum(t.size for t in to_copy) * scale),
                             self.options.parallelism)

    def _hold_staging(self, keeper: staging.LeaseKeeper, held: dict[tuple[str, str, str], Location],
                      pending: list[UnitWork]) -> None:
        """Lease the staging roots beside these units that the run does not hold yet, after removing the staging
        that dead runs left beside them."""
        new = {key: parent for key, parent in self._staging_parents(pending).items() if key not in held}
        if not new:
            return
        held.update(new)
        keeper.hold(staging.staging_root(parent, self.run_id) for parent in new.values())
        self._remove_dead_staging(list(new.values()))

    def _copy_and_commit(self, engine: Engine, pending: list[UnitWork], tasks: list[FileTask],
                         counter: _Progress) -> None:
        results = engine.execute(tasks, self._transfer_options(), counter.window(tasks))
        by_unit: dict[int, list[FileResult]] = {}
        for result in results:
            by_unit.setdefault(result.task.unit_index, []).append(result)

        def finish(work: UnitWork) -> None:
            self._finish(work, by_unit.get(work.index, []))

        workers = self._unit_workers([work.unit for work in pending])
        if workers < 2:
            for work in pending:
                finish(work)
            return
        with ThreadPoolExecutor(workers, thread_name_prefix="hivecat-commit") as pool:
            for _ in pool.map(finish, pending):  # units commit side by side; each fails alone (_finish)
                pass

    def _transfer_options(self) -> TransferOptions:
        return TransferOptions(self.storage, self.options.verify == "checksum", self.options.bandwidth,
                               **self.options.transfer_overrides)

    def _finish(self, work: UnitWork, results: list[FileResult]) -> None:
        began = time.monotonic()
        errors = [r.error for r in results if r.error]
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            self._fail(work, f"{errors[0]}{more}")
            return
        manifest = self._manifest(work, results)
        checksums = self.options.verify == "checksum"
        try:
            changed = self._changed_since_decided(work)
            if changed is not None:
                self._fail(work, changed)
            elif work.unit.target.is_object_store:
                removed = work.extras if self.options.delete else []
                commit.commit_on_object_store(self.storage, work.staging, work.unit.target, manifest,
                                              work.to_copy, removed, self.parallelism, checksums,
                                              replaces_manifest=work.found is not None)
            else:
                commit.commit_by_rename(self.storage.filesystem(work.unit.target), work.staging,
                                        work.unit.target, manifest, checksums, self.parallelism)
        except LinkRefused as exc:
            self._fail(work, f"not committed: {self._link_failure(work.unit, exc)}")
        except OSError as exc:
            self._fail(work, f"commit failed: {exc}")
        except Exception as exc:  # noqa: BLE001 - e.g. an S3 client error: this unit fails, not the run
            self._fail(work, f"commit failed: {type(exc).__name__}: {exc}")
        work.result.seconds = round(time.monotonic() - began, 3)

    def _changed_since_decided(self, work: UnitWork) -> str | None:
        """Why the unit may no longer be replaced: its manifest is not the one it had when decided (another
        run, perhaps another owner's, committed into it meanwhile). None when it is the same."""
        try:
            now = read_manifest(self.storage.filesystem(work.unit.target), work.unit.target)
        except ManifestUnreadable as exc:
            return f"not committed: {exc}"
        if now != work.found:
            return (f"not committed: {work.unit.target.uri} was committed into by another run while this one "
                    "copied (rerun to copy it again)")
        return None

    def _manifest(self, work: UnitWork, results: list[FileResult]) -> UnitManifest:
        now = _now()
        recorded = work.manifest or {}
        entries = {}
        for path in work.up_to_date:
            stat = work.source_files[path]
            old = recorded_entry(recorded[path]) if path in recorded else None
            checksum = work.checksums.get(path) or (old.checksum if old else None)
            entries[path] = (old._replace(checksum=checksum) if old else
                             FileEntry(path, stat.size, stat.mtime_ns, checksum, None, now, self.run_id))
        for result in results:
            if not result.task.carry:
                stat = work.source_files[result.task.relpath]
                entries[result.task.relpath] = FileEntry(result.task.relpath, stat.size, stat.mtime_ns,
                                                         result.checksum, result.etag, now, self.run_id)
        return UnitManifest(work.unit.id, work.unit.source.uri, self.run_id, now,
                            tuple(entries[p] for p in sorted(entries)), self.plan.owner)

    def _count(self, work: UnitWork, pending: bool) -> None:
        result = work.result
        result.files_skipped = len(work.up_to_date)
        if result.status == FAILED or not pending:
            return
        result.status = DONE
        result.files_copied = len(work.to_copy)
        result.bytes_copied = sum(work.source_files[p].size for p in work.to_copy)
        result.files_deleted = len(work.extras) if self.options.delete else 0

    # --- staging housekeeping -----------------------------------------------------------------------

    @staticmethod
    def _staging_parents(works: list[UnitWork]) -> dict[tuple[str, str, str], Location]:
        return {(w.unit.target.scheme, w.unit.target.authority, w.unit.target.parent.path): w.unit.target.parent
                for w in works}

    def _remove_dead_staging(self, parents: list[Location]) -> None:
        """Staging of runs that died (their lease says so) beside `parents`; other runs' live staging is theirs."""
        for parent in parents:
            try:
                dead = staging.dead_staging(self.storage, parent, self.run_id)
            except OSError:
                continue
            for root in dead:
                try:
                    commit.remove_tree(self.storage, root)
                except Exception:  # noqa: BLE001 - housekeeping (another run may remove it first) never fails a run
                    pass
