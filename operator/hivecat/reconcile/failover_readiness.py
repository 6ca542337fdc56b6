"""What a TableReplica's status remembers for the day its primary is gone, and the gate an unplanned failover passes
before it reads anything. Pure: from status and spec, no I/O.

status.readiness holds, per secondary, the last measured readiness (replication/readiness.py): whether an
unplanned failover would move every unit, its recovery point (as a time, and as an age when measured) and the
units it could not move. A secondary that could not be measured now (the primary does not answer) keeps its last
entry and that entry's time.

An unplanned failover is refused, before any I/O, unless the author accepted a recovery point
(spec.failover.acceptRecoveryPoint) that is
- not newer than the target's recovery point now: the author accepts at least what would be lost; and
- not older than the last switch: a value left in the spec from an earlier failover never applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hivecat.reconcile.replica_status import format_duration
from hivecat.replication.readiness import Readiness
from hivecat.specs.tablereplica import FailoverSettings
from hivecat.timestamps import parse_rfc3339, rfc3339

SHOWN_WITHOUT_COPY = 20  # unit ids of status.readiness[].withoutCopy (the CRD's maxItems)


@dataclass(frozen=True)
class Remembered:
    """What earlier passes wrote in status that a pass needs."""

    left_on: str | None = None  # status.leftBehind.cluster: where a switch left units it did not verify
    readiness: tuple[Mapping[str, Any], ...] = ()  # status.readiness, as written
    last_switch: datetime | None = None  # status.lastFailoverTime
    recovery_points: Mapping[str, datetime] = field(default_factory=dict)  # per secondary, the last measured


def remembered(status: Mapping[str, Any] | None) -> Remembered:
    """The parts of a TableReplica's status a pass reads; anything malformed is as if absent."""
    status = status or {}
    left = status.get("leftBehind")
    entries = tuple(e for e in status.get("readiness") or () if isinstance(e, Mapping) and isinstance(e.get("cluster"), str))
    points = {}
    for entry in entries:
        point = parse_rfc3339(entry.get("recoveryPoint") or "") if isinstance(entry.get("recoveryPoint"), str) else None
        if point is not None:
            points[entry["cluster"]] = point
    last = status.get("lastFailoverTime")
    return Remembered(left.get("cluster") if isinstance(left, Mapping) and isinstance(left.get("cluster"), str)
                      else None, entries, parse_rfc3339(last) if isinstance(last, str) else None, points)


def readiness_entry(measured: Readiness) -> dict[str, Any]:
    return {"cluster": measured.cluster, "failoverReady": measured.failover_ready,
            "recoveryPoint": rfc3339(measured.recovery_point),
            "recoveryPointAge": format_duration((measured.measured_at - measured.recovery_point).total_seconds()),
            "measuredAt": rfc3339(measured.measured_at), "units": measured.units,
            "unitsBehind": len(measured.behind), "behind": list(measured.behind[:SHOWN_WITHOUT_COPY]),
            "unitsWithoutCopy": len(measured.without_copy),
            "withoutCopy": list(measured.without_copy[:SHOWN_WITHOUT_COPY])}


def readiness_status(previous: Sequence[Mapping[str, Any]], measured: Sequence[Readiness],
                     secondaries: Sequence[str]) -> list[dict[str, Any]]:
    """status.readiness for `secondaries`: this pass's measurement, else the last one remembered."""
    now = {m.cluster: readiness_entry(m) for m in measured}
    before = {e["cluster"]: dict(e) for e in previous}
    return [now.get(name) or before[name] for name in secondaries if name in now or name in before]


def unplanned_refusal(failover: FailoverSettings, target: str, memory: Remembered) -> str | None:
    """Why an unplanned failover to `target` may not start, or None."""
    accepted = failover.accept_recovery_point
    if accepted is None:  # the spec parser refuses this already; kept for a body that skipped it
        return "an Unplanned failover needs spec.failover.acceptRecoveryPoint"
    point = memory.recovery_points.get(target)
    if point is None:
        return (f"no recovery point of {target} was ever measured (status.readiness): an unplanned failover "
                "cannot say what it would lose")
    if memory.last_switch is not None and accepted < memory.last_switch:
        return (f"spec.failover.acceptRecoveryPoint {rfc3339(accepted)} is older than the last switch "
                f"({rfc3339(memory.last_switch)}): it was accepted for an earlier failover; copy the current "
                f"recoveryPoint of {target} from status.readiness")
    if point < accepted:
        return (f"the recovery point of {target} is {rfc3339(point)}, older than the accepted "
                f"{rfc3339(accepted)}: more would be lost than was accepted; accept {rfc3339(point)} to fail over "
                "losing what changed on the primary after it")
    return None
