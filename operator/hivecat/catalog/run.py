"""The steps every catalog's relocation and undo take, once: validate the request, dry-run or lock → plan
or resume → apply → record; undo under the same lock. SqlCatalog (transactions) and ApiCatalog (Glue,
Thrift: journaled writes without transactions) supply only the backend parts."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager

import sqlalchemy as sa

from hivecat.catalog.journal import DONE, FAILED, RUN_UNDONE, Journal
from hivecat.catalog.model import (
    CHANGED_AFTER_CHECK, ChunkProgress, Confirm, JournaledRun, Refusal, RelocationRefused, RelocationReport, RelocationRequest,
)
from hivecat.locations.prefix import InvalidLocation, LocationPrefix, check_relocation

# The widest location column of any HMS schema (SDS.LOCATION and the others are VARCHAR(4000)); Glue's
# LocationUri is shorter still. A longer prefix could never be stored, nor journaled.
MAX_LOCATION_LENGTH = 4000


def checked_prefixes(request: RelocationRequest) -> tuple[LocationPrefix, LocationPrefix]:
    """The request's prefixes, parsed; refuses what no backend may run (bad or overlapping prefixes, a
    scheme change not asked for, a chunk size below 1)."""
    try:
        old, new = check_relocation(request.old_prefix, request.new_prefix, request.allow_scheme_change)
    except InvalidLocation as exc:
        option = "allow_scheme_change" if exc.reason == "scheme-change" else None
        raise RelocationRefused([Refusal(exc.reason, str(exc), option=option)]) from None
    longest = max(len(request.old_prefix), len(request.new_prefix))
    if longest > MAX_LOCATION_LENGTH:
        raise RelocationRefused([Refusal("too-long", f"a prefix of {longest} characters: no metastore holds a "
                                                     f"location longer than {MAX_LOCATION_LENGTH}")])
    if request.chunk_size is not None and request.chunk_size < 1:
        raise RelocationRefused([Refusal("invalid-chunk-size", "the chunk size must be at least 1",
                                         option="chunk_size")])
    return old, new


SHOWN_CHANGES = 5


class Confirmation:
    """A run's Confirm, asked once: by the backend inside its transaction where it has one, else by the
    skeleton after the writes (then a change undoes the run). Raises RelocationRefused (changed-after-check)."""

    def __init__(self, confirm: Confirm | None) -> None:
        self._confirm, self.asked = confirm, False

    def __call__(self, undone: str | None = None) -> None:
        if self._confirm is None or self.asked:
            return
        self.asked = True
        changed = list(self._confirm())
        if changed:
            more = f" (and {len(changed) - SHOWN_CHANGES} more)" if len(changed) > SHOWN_CHANGES else ""
            after = f"run {undone} was undone" if undone else "the run was rolled back and changed nothing"
            raise RelocationRefused([Refusal(CHANGED_AFTER_CHECK, (
                f"{len(changed)} of what the new locations point at changed after it was checked: "
                f"{'; '.join(changed[:SHOWN_CHANGES])}{more}; {after}"))])


class JournaledRelocation:
    """Template of relocate/undo/history; subclasses implement the hooks below."""

    name: str
    engine: sa.Engine  # where the journal lives
    journal: Journal

    # --- hooks ----------------------------------------------------------------------------------
    def _check_request(self, request: RelocationRequest) -> None:
        """Backend-specific refusals that need the catalog but write nothing (e.g. character sets)."""

    def _ensure_journal(self) -> None:
        raise NotImplementedError

    def _run_lock(self) -> AbstractContextManager[None]:
        """One run per catalog: refuses (reason `locked`) while another holds it."""
        raise NotImplementedError

    def _dry_run(self, request: RelocationRequest, old: LocationPrefix, new: LocationPrefix) -> RelocationReport:
        raise NotImplementedError

    def _execute(self, request: RelocationRequest, old: LocationPrefix, new: LocationPrefix,
                 progress: ChunkProgress | None, confirm: Confirmation) -> RelocationReport:
        """Plan (or resume this request's unfinished run) and apply; the report carries its run id. A backend
        with transactions asks `confirm` before it commits; otherwise the skeleton asks after."""
        raise NotImplementedError

    def _undo_run(self, run_id: str, report: RelocationReport) -> None:
        """Write back what run_id changed where the catalog still holds what it wrote; fill the report."""
        raise NotImplementedError

    # --- the skeleton ---------------------------------------------------------------------------
    def _locked(self) -> AbstractContextManager[None]:
        self._ensure_journal()  # the journal's own tables: never a write to the catalog
        return self._run_lock()

    def relocate(self, request: RelocationRequest, progress: ChunkProgress | None = None,
                 confirm: Confirm | None = None) -> RelocationReport:
        """`confirm`: see Confirm; a change it names rolls the run back, or undoes it, and refuses it."""
        began = time.monotonic()
        old, new = checked_prefixes(request)
        self._check_request(request)
        if request.dry_run:
            report = self._dry_run(request, old, new)
            report.run_id = report.status = "dry-run"
            report.seconds = round(time.monotonic() - began, 3)
            return report
        with self._locked():
            confirmation = Confirmation(confirm)
            report = self._execute(request, old, new, progress, confirmation)
            self._confirm_applied(report, confirmation)
            report.seconds = round(time.monotonic() - began, 3)
            with self.engine.begin() as conn:
                self.journal.set_status(conn, report.run_id, FAILED if report.failed else DONE, report.to_dict())
        return report

    def _confirm_applied(self, report: RelocationReport, confirmation: Confirmation) -> None:
        """Ask a confirmation the backend could not ask before committing; undo the run on a change."""
        try:
            confirmation(undone=report.run_id)
        except RelocationRefused:
            undo = RelocationReport("", self.name, report.new_prefix, report.old_prefix, False, status="undone")
            self._undo_run(report.run_id, undo)
            if not undo.failed:  # otherwise the run stays `undoing`: `hivecat relocate --undo` retries it
                with self.engine.begin() as conn:
                    self.journal.set_status(conn, report.run_id, RUN_UNDONE)
            raise

    def undo(self, run_id: str) -> RelocationReport:
        began = time.monotonic()
        with self._locked():
            with self.engine.connect() as conn:
                run = self.journal.undoable_run(conn, self.name, run_id)
            report = RelocationReport("", self.name, run.new_prefix, run.old_prefix, False, status="undone")
            self._undo_run(run_id, report)
            report.seconds = round(time.monotonic() - began, 3)
            if not report.failed:  # otherwise the run stays `undoing`: undo again to retry what failed
                with self.engine.begin() as conn:
                    self.journal.set_status(conn, run_id, RUN_UNDONE)
        return report

    def history(self) -> list[JournaledRun]:
        self._ensure_journal()
        with self.engine.connect() as conn:
            return self.journal.history(conn, self.name)
