"""A plan's units decided, copied and committed a window at a time: copying starts before the plan is decided,
every unit ends up copied and summarized in plan order, and the run's memory is a window's."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from support.copy_trees import read_manifest, read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine
from hivecat.copy import copier as copier_module
from hivecat.copy import engines
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.plan import plan_from_document


def plan_of(tmp_path: Path, count: int, files_per_unit: int = 1):
    for index in range(count):
        (tmp_path / "src" / f"p={index:05d}").mkdir(parents=True)
        write_tree(tmp_path / "src" / f"p={index:05d}",
                   {f"part-{n}.orc": f"{index}/{n}".encode() for n in range(files_per_unit)})
    return plan_from_document({"version": 1, "units": [
        {"id": f"p={index:05d}", "source": uri(tmp_path / "src" / f"p={index:05d}"),
         "target": uri(tmp_path / "dst" / f"p={index:05d}")} for index in range(count)]})


class CountingCopier(Copier):
    """Counts the units decided, and what each engine call finds decided when it starts."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.decided = 0

    def decide(self, index, unit):
        self.decided += 1
        return super().decide(index, unit)


class RecordingEngine(LocalEngine):
    def __init__(self, copier_ref: list) -> None:
        super().__init__(2)
        self.copier_ref, self.calls = copier_ref, []

    def execute(self, tasks, options, progress=None):
        self.calls.append((self.copier_ref[0].decided, len(tasks)))
        return super().execute(tasks, options, progress)


def run_counting(plan, options: CopyOptions = CopyOptions(), progress=None):
    ref: list = []
    engine = RecordingEngine(ref)
    copier = CountingCopier(plan, options, engine=engine)
    ref.append(copier)
    return copier.run(progress), engine.calls


def test_copying_starts_after_the_first_window_and_every_unit_is_copied_in_plan_order(tmp_path, monkeypatch):
    monkeypatch.setattr(copier_module, "WINDOW_UNITS", 4)
    monkeypatch.setattr(copier_module, "DECIDE_BATCH", 2)
    plan = plan_of(tmp_path, 10)
    summary, calls = run_counting(plan)
    assert calls == [(4, 4), (8, 4), (10, 2)]  # the first copy began with 4 of the 10 units decided
    assert summary.status == "succeeded"
    assert [u.id for u in summary.units] == [u.id for u in plan.units]
    assert {u.status for u in summary.units} == {"done"}
    for unit in plan.units:
        target = Path(unit.target.path)
        assert read_tree(target) == read_tree(Path(unit.source.path))
        assert [f["path"] for f in read_manifest(target)["files"]] == ["part-0.orc"]
    assert not [p for p in (tmp_path / "dst").iterdir() if p.name.startswith(STAGING_PREFIX)]  # removed at the end

    again, calls = run_counting(plan)
    assert calls == [] and {u.status for u in again.units} == {"skipped"}


def test_a_window_closes_once_its_listings_hold_enough_files(tmp_path, monkeypatch):
    monkeypatch.setattr(copier_module, "WINDOW_FILES", 5)
    monkeypatch.setattr(copier_module, "DECIDE_BATCH", 1)
    _, calls = run_counting(plan_of(tmp_path, 5, files_per_unit=3))
    assert calls == [(2, 6), (4, 6), (5, 3)]  # 3 files listed, then 6: the window closes


def test_progress_counts_the_run_across_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(copier_module, "WINDOW_UNITS", 2)
    monkeypatch.setattr(copier_module, "DECIDE_BATCH", 2)
    seen: list[tuple[int, int, int, int]] = []
    summary, _ = run_counting(plan_of(tmp_path, 5, files_per_unit=2), progress=lambda *args: seen.append(args))
    files = [done for done, _, _, _ in seen]
    assert files == sorted(files) and seen[-1][:2] == (10, 10)
    assert seen[-1][2] == seen[-1][3] == summary.totals()["bytes_copied"]
    assert all(done <= total for done, total, _, _ in seen)


def test_a_dry_run_in_windows_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(copier_module, "WINDOW_UNITS", 2)
    monkeypatch.setattr(copier_module, "DECIDE_BATCH", 1)
    summary, calls = run_counting(plan_of(tmp_path, 5), CopyOptions(dry_run=True))
    assert calls == [] and not (tmp_path / "dst").exists()
    assert [u.files_copied for u in summary.units] == [1] * 5


@pytest.mark.parametrize("found, expected", [(3, "local"), (30, "spark")])
def test_auto_picks_the_engine_for_the_whole_plan_from_its_first_window(tmp_path, monkeypatch, found, expected):
    """40 units, 10 decided: the files found to copy so far count four times (the plan's size), not once."""
    monkeypatch.setattr(engines, "AUTO_SPARK_FILES", 100)
    plan = plan_of(tmp_path, 40)
    copier = Copier(plan, engine="auto")
    tasks = [copier_module.FileTask(0, f"f{n}", plan.units[0].source, plan.units[0].target, 1, 0)
             for n in range(found)]
    assert copier._auto_engine(tasks, decided=10).name == expected


def test_a_run_holds_one_window_of_units_not_the_plan(tmp_path, monkeypatch):
    """The peak memory of a 600-unit run falls with the window (it held every unit's work and tasks at once)."""
    plan = plan_of(tmp_path, 600)
    peaks = {}
    for window in (600, 32):
        monkeypatch.setattr(copier_module, "WINDOW_UNITS", window)
        monkeypatch.setattr(copier_module, "DECIDE_BATCH", 32)
        tracemalloc.start()
        try:
            summary = Copier(plan, CopyOptions(dry_run=True), engine=LocalEngine(2)).run()
            peaks[window] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert summary.totals()["files_copied"] == 600
    assert peaks[32] < 0.5 * peaks[600], peaks


def test_empty_units_are_committed_with_the_engine_auto_picks(tmp_path, monkeypatch):
    """A window of units to commit without a file to copy still gets its engine (the copies of nothing)."""
    monkeypatch.setattr(copier_module, "WINDOW_UNITS", 2)
    plan = plan_of(tmp_path, 3, files_per_unit=0)
    summary = Copier(plan, engine="auto").run()
    assert summary.engine == "local" and [u.status for u in summary.units] == ["done"] * 3
    assert all(read_manifest(Path(u.target.path))["files"] == [] for u in plan.units)
