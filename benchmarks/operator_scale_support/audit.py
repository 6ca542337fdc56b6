"""The operator's API requests over a window, from the API server's audit log (tests/kube/controlplane.py audits
every request of a ServiceAccount at Metadata level, as JSON lines). A request counts once (by auditID) when it
was received inside the window; a watch counts when it started."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

HIVECAT_KINDS = ("hivecatalogs", "clusterstorages", "tablereplicas", "catalogpolicies")


@dataclass
class Window:
    seconds: float
    requests: Counter = field(default_factory=Counter)  # (verb, resource[/subresource]) -> count

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    @property
    def per_second(self) -> float:
        return self.total / self.seconds if self.seconds > 0 else 0.0

    def list_watch(self) -> dict[str, dict[str, int]]:
        """resource -> {"list": n, "watch": n}, the hivecat kinds always present."""
        found: dict[str, dict[str, int]] = {kind: {"list": 0, "watch": 0} for kind in HIVECAT_KINDS}
        for (verb, resource), count in self.requests.items():
            if verb in ("list", "watch"):
                found.setdefault(resource, {"list": 0, "watch": 0})[verb] += count
        return found

    def list_watch_text(self) -> str:
        """Compact: `kind:list/watch` per resource, e.g. `tablereplicas:0/0,pods:2/0`."""
        return ",".join(f"{kind}:{c['list']}/{c['watch']}" for kind, c in sorted(self.list_watch().items()))

    def top(self, count: int = 12) -> list[tuple[str, int]]:
        return [(f"{verb} {resource}", n) for (verb, resource), n in self.requests.most_common(count)]

    def top_text(self, count: int = 12) -> str:
        return ", ".join(f"{what} {n}" for what, n in self.top(count)) or "no request"


class AuditWindow:
    """Start with begin(), end with end(): the operator's requests received in between."""

    def __init__(self, log: Path, user_prefix: str) -> None:
        self.log, self.user_prefix = log, user_prefix
        self.offset = 0
        self.began = 0.0

    def begin(self) -> None:
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        self.began = time.time()

    def end(self, settle: float = 1.0) -> Window:
        ended = time.time()
        time.sleep(settle)  # what was received before `ended` is written by now
        window = Window(ended - self.began)
        seen: set[str] = set()
        with self.log.open("rb") as handle:
            handle.seek(self.offset)
            for raw in handle:
                try:
                    entry = json.loads(raw)
                except ValueError:
                    continue  # a line being written
                if not (entry.get("user") or {}).get("username", "").startswith(self.user_prefix):
                    continue
                audit_id = entry.get("auditID")
                if audit_id in seen:
                    continue
                received = _epoch(entry.get("requestReceivedTimestamp"))
                if received is None or not self.began <= received <= ended:
                    continue
                seen.add(audit_id)
                ref = entry.get("objectRef") or {}
                resource = ref.get("resource") or entry.get("requestURI", "?").split("?")[0]
                if ref.get("subresource"):
                    resource += "/" + ref["subresource"]
                window.requests[(entry.get("verb", "?"), resource)] += 1
        return window


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
