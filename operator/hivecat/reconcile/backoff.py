"""One retry policy for every handler: a pass that ends in an error (not ready, a copy that failed, a lock held
by another run) is tried again after FIRST seconds, doubling with each failure in a row, never more than
CAP, and never later than the kind's own interval would have brought it back. A pass that ends well resets
the count."""

from __future__ import annotations

FIRST = 10.0
CAP = 600.0


def backoff(failures: int, interval: float = CAP) -> float:
    """Seconds before the next try after `failures` failed passes in a row (1 for the first failure)."""
    return min(CAP, interval, FIRST * 2 ** max(0, failures - 1))
