"""Percentiles and small formatting helpers for the benchmark's figures."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def rounded(value: float, digits: int = 3) -> float:
    """A JSON-safe float: NaN and infinities become -1 (the JSON line holds numbers only)."""
    if value is None or math.isnan(value) or math.isinf(value):
        return -1.0
    return round(value, digits)


def ratio(a: float, b: float) -> float:
    """a / b, or -1 when either is missing (None, NaN, or the -1 of a figure that could not be measured)."""
    if a is None or b is None or math.isnan(a) or math.isnan(b) or a < 0 or b <= 0:
        return -1.0
    return round(a / b, 2)

