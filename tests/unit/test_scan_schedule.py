"""When a ClusterStorage's daemon makes its next drift scan: the daemon sleeps exactly until then (events wake
it sooner). A failed scan waits out its backoff even when no scan ever succeeded (it used to be tried again on
every wake, every 5 s, since "never scanned" read as due now), and the daemon's own last scan counts before
its body shows it (else the scan it just made was made again at once)."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

import kopf

from hivecat.handlers.drift import scan_due_in
from hivecat.reconcile.drift import rfc3339

HOUR = 3600.0


def body(*, ready: bool = True, generation: int = 1, observed: int = 1, last_scan: float | None = None,
         suspend: bool = False) -> kopf.Body:
    status: dict[str, Any] = {"observedGeneration": observed,
                              "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if last_scan is not None:
        status["drift"] = {"lastScanTime": rfc3339(datetime.fromtimestamp(last_scan, timezone.utc))}
    return kopf.Body({"metadata": {"namespace": "ns", "name": "own", "generation": generation},
                      "spec": {"catalogRef": {"name": "dev"}, "filesystem": "file:///data", "scanInterval": "1h",
                               "suspend": suspend},
                      "status": status})


def memo(**values: Any) -> kopf.Memo:
    found = kopf.Memo()
    found.update(values)
    return found


def test_never_scanned_is_due_now() -> None:
    assert scan_due_in(body(), memo()) == 0.0


def test_a_scan_is_due_an_interval_after_the_last_within_its_jitter() -> None:
    due = scan_due_in(body(last_scan=time.time() - 60), memo())
    assert 0.9 * HOUR - 60 - 2 <= due <= 1.1 * HOUR - 60


def test_a_failed_scan_waits_its_backoff_although_none_ever_succeeded() -> None:
    due = scan_due_in(body(), memo(retry_at=time.time() + 40))
    assert 39 <= due <= 40


def test_the_daemons_own_last_scan_counts_before_the_body_shows_it() -> None:
    due = scan_due_in(body(last_scan=time.time() - 2 * HOUR), memo(scanned_at=time.time()))
    assert due >= 0.9 * HOUR - 2


def test_asked_for_is_due_now() -> None:
    assert scan_due_in(body(last_scan=time.time()), memo(scan_now=True)) == 0.0


def test_no_scan_while_refused_suspended_or_the_spec_not_yet_taken() -> None:
    for stopped in (body(ready=False), body(suspend=True), body(generation=2, observed=1)):
        assert scan_due_in(stopped, memo(scan_now=True)) == float("inf")
