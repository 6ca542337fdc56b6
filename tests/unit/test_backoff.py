"""The one retry policy every handler uses after a failed pass."""

from __future__ import annotations

import pytest

from hivecat.reconcile.backoff import CAP, FIRST, backoff


@pytest.mark.parametrize("failures, seconds", [(0, FIRST), (1, 10.0), (2, 20.0), (3, 40.0), (6, 320.0), (7, CAP),
                                               (60, CAP)])
def test_it_doubles_from_ten_seconds_up_to_ten_minutes(failures: int, seconds: float) -> None:
    assert backoff(failures) == seconds


def test_it_never_waits_longer_than_the_kinds_own_interval() -> None:
    assert backoff(5, interval=60.0) == 60.0 and backoff(1, interval=60.0) == 10.0
