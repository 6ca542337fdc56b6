"""Go-style durations (15m, 1h30m, 90s, 500ms): how the CRDs and the chart write schedules and minimums. One
reading for the spec parsers and the operator's own settings; no other hivecat module is imported here."""

from __future__ import annotations

import re
from typing import Final

# The CRDs' pattern: Go durations without sign or µs/ns.
DURATION: Final = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h))+")
_PART: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_UNIT_SECONDS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration_seconds(text: str) -> float | None:
    """Seconds of `text`, or None when it is not such a duration."""
    if not DURATION.fullmatch(text):
        return None
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(text))
