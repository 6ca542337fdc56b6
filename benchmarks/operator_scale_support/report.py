"""What operator_scale.py prints: the table of figures per N, and the operator's log read for errors and
warnings (grouped by their text, names and numbers masked)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol


class Outcome(Protocol):
    n: int
    figures: dict[str, Any]
    lines: list[str]


_NOISE = [(re.compile(r"^\[[^\]]*\] "), ""), (re.compile(r"\[bench-\d+/[^\]]+\]"), "[NS/NAME]"),
          (re.compile(r"bench-\d\d"), "bench-NN"), (re.compile(r"\b[tpc]\d{2,3}\b"), "X"),
          (re.compile(r"\d{8}T\d{6}Z-[0-9a-f]+"), "RUN"), (re.compile(r"\d+(\.\d+)?"), "N")]


def log_problems(text: str) -> tuple[Counter, dict[str, str], int]:
    """Error and warning lines of the operator's log, grouped by their text with names and numbers masked:
    (group -> count, group -> first line, tracebacks)."""
    groups: Counter = Counter()
    first: dict[str, str] = {}
    for line in text.splitlines():
        if "[ERROR" not in line and "[WARNING" not in line and "[CRITICAL" not in line:
            continue
        group = line
        for pattern, replacement in _NOISE:
            group = pattern.sub(replacement, group)
        group = group[:200]
        groups[group] += 1
        first.setdefault(group, line[:600])
    return groups, first, text.count("Traceback (most recent call last)")


TABLE = [
    ("resources (N)", "resources", "{}"),
    ("Ready within the cap", "ready_count", "{}"),
    ("Ready p50 / p99 (s from start)", ("ready_p50_s", "ready_p99_s"), "{} / {}"),
    ("all Ready (s)", "all_ready_s", "{}"),
    ("HiveCatalog / ClusterStorage / TableReplica Ready p50 (s)",
     ("hivecatalog_ready_p50_s", "clusterstorage_ready_p50_s", "tablereplica_ready_p50_s"), "{} / {} / {}"),
    ("change → observedGeneration p50 / p99 (s)", ("change_p50_s", "change_p99_s"), "{} / {}"),
    ("change → Ready's observedGeneration p50 / p99 (s)", ("change_ready_p50_s", "change_ready_p99_s"), "{} / {}"),
    ("copy Jobs / pods Pending", ("pending_jobs", "pending_pods"), "{} / {}"),
    ("change with Jobs Pending p50 / p99 (s)", ("change_pending_p50_s", "change_pending_p99_s"), "{} / {}"),
    ("  … Ready's observedGeneration p50 / p99 (s)", ("change_pending_ready_p50_s", "change_pending_ready_p99_s"),
     "{} / {}"),
    ("  … not observed within the wait (obs / Ready)", ("change_pending_timeouts", "change_pending_ready_missing"),
     "{} / {}"),
    ("pending / idle change p99 (p50)", ("change_pending_over_idle", "change_pending_over_idle_p50"), "{}× ({}×)"),
    ("event loop lag max (s): at Ready / at end", ("loop_lag_max_at_ready_s", "loop_lag_max_s"), "{} / {}"),
    ("operator RSS at Ready / peak (MB)", ("rss_at_ready_mb", "rss_peak_mb"), "{} / {}"),
    ("operator CPU at Ready / at end (s)", ("cpu_at_ready_s", "cpu_s"), "{} / {}"),
    ("TableReplica syncs / mean seconds", ("sync_passes", "sync_mean_s"), "{} / {}"),
    ("HiveCatalog checks / mean seconds", ("catalog_check_passes", "catalog_check_mean_s"), "{} / {}"),
    ("operator threads at end", "threads_at_end", "{}"),
    ("steady requests/s", "steady_requests_per_s", "{}"),
    ("requests/s with Jobs pending", "pending_requests_per_s", "{}"),
    ("log errors / warnings / tracebacks (running)", ("log_errors", "log_warnings", "log_tracebacks"),
     "{} / {} / {}"),
    ("log warnings while stopping", "log_shutdown_warnings", "{}"),
    ("scenario time (s)", "scenario_s", "{}"),
]
TARGETS = {"all_ready_s": "≤ 60 s at 1,000", "change_p99_s": "≤ 2 s", "change_pending_over_idle": "≈ 1×",
           "loop_lag_max_s": "≤ 0.1 s", "rss_peak_mb": "≤ 512 MB"}


def print_table(outcomes: Sequence[Outcome]) -> None:
    width = max(len(label) for label, _, _ in TABLE) + 2
    print(f"{'':{width}}" + "".join(f"{'N=' + str(o.n):>24}" for o in outcomes))
    for label, keys, form in TABLE:
        names = keys if isinstance(keys, tuple) else (keys,)
        cells = "".join(f"{form.format(*(o.figures.get(k, '—') for k in names)):>24}" for o in outcomes)
        target = next((TARGETS[k] for k in names if k in TARGETS), "")
        print(f"{label:{width}}" + cells + (f"   target {target}" if target else ""))
    for o in outcomes:
        print(f"\nN={o.n}: steady list/watch per kind: {o.figures.get('steady_list_watch_per_kind', '—')}")
        for line in o.lines:
            print(f"N={o.n}: {line}")
