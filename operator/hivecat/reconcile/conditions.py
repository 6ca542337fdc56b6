"""Status conditions as the reconcilers compute them, and their merge into what the CR already shows.

A reconciler states each condition fresh on every pass; `merge` keeps `lastTransitionTime` from the
previous status unless the condition's status changed, so the time says when the state last changed, not
when the operator last looked (the Kubernetes API conventions for conditions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
MAX_MESSAGE = 32768  # the CRDs' maxLength for condition messages


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # TRUE, FALSE or UNKNOWN
    reason: str  # CamelCase, stable: part of the API
    message: str = ""

    @classmethod
    def of(cls, type_: str, ok: bool, reason: str, message: str = "") -> Condition:
        return cls(type_, TRUE if ok else FALSE, reason, message)


def merge(previous: Sequence[Mapping[str, Any]] | None, current: Iterable[Condition], *, generation: int,
          now: str) -> list[dict[str, Any]]:
    """The conditions list to write: `current`, with transition times carried over where status held.

    Conditions the reconciler no longer states are dropped (their type no longer applies, e.g. SchemaReady
    after a switch to Glue). A type stated twice is written once, as last stated: the CRDs list conditions as
    a map keyed by type, which the API server would refuse with duplicates. `now`: the caller's clock (this
    layer reads none), the lastTransitionTime of a condition whose status moved.
    """
    before = {c.get("type"): c for c in previous or ()}
    latest: dict[str, Condition] = {}
    for condition in current:
        latest.pop(condition.type, None)  # the last statement wins
        latest[condition.type] = condition
    merged = []
    for condition in latest.values():
        old = before.get(condition.type)
        moved = old is None or old.get("status") != condition.status
        merged.append({
            "type": condition.type,
            "status": condition.status,
            "reason": condition.reason,
            "message": condition.message[:MAX_MESSAGE],
            "lastTransitionTime": now if moved else (old.get("lastTransitionTime") or now),
            "observedGeneration": generation,
        })
    return merged


def find(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions or () if c.get("type") == type_), None)


def kept(conditions: Sequence[Mapping[str, Any]] | None, *types: str) -> list[Condition]:
    """The conditions of `types` as the status shows them, to state again unchanged: those another writer owns
    (a registration's Ready, a drift scan's Drifted), which a pass of its own must not drop."""
    return [Condition(c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
            for c in conditions or () if c.get("type") in types]
