"""Times as the Kubernetes API writes them in status (a condition's lastTransitionTime, lastRunTime,
lastScanTime) and as hivecat's own markers record them: RFC 3339, UTC, whole seconds, "Z"."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Final

API_TIME: Final = "%Y-%m-%dT%H:%M:%SZ"  # strftime / strptime


def rfc3339(moment: datetime) -> str:
    """`moment` in UTC, whole seconds (a naive datetime is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(API_TIME)


def parse_rfc3339(text: str) -> datetime | None:
    """A time as rfc3339 writes it (or with a fraction, or an offset), in UTC; None when it is not one."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # RFC 3339 always names its offset
    return moment.astimezone(timezone.utc)
