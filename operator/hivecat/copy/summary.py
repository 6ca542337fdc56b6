"""The run summary: units done, skipped and failed (with reasons), files, bytes, seconds, engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hivecat.copy import documents

DONE, SKIPPED, FAILED = "done", "skipped", "failed"


@dataclass
class UnitResult:
    id: str
    source: str
    target: str
    status: str = SKIPPED
    reason: str | None = None
    files_copied: int = 0
    bytes_copied: int = 0
    files_skipped: int = 0
    files_deleted: int = 0
    seconds: float = 0.0


@dataclass
class CopySummary:
    run_id: str
    engine: str
    verify: str
    dry_run: bool
    delete: bool
    started_at: str
    seconds: float = 0.0
    units: list[UnitResult] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "failed" if any(u.status == FAILED for u in self.units) else "succeeded"

    def totals(self) -> dict[str, int]:
        totals = {f"units_{s}": sum(u.status == s for u in self.units) for s in (DONE, SKIPPED, FAILED)}
        for key in ("files_copied", "bytes_copied", "files_skipped", "files_deleted"):
            totals[key] = sum(getattr(u, key) for u in self.units)
        return totals

    def to_dict(self) -> dict[str, Any]:
        # flat dataclasses: their own dicts, copied (asdict deep-copies each value, ~1 s per 100,000 units)
        document = {"version": documents.VERSION, **{k: v for k, v in vars(self).items() if k != "units"},
                    "units": [dict(vars(unit)) for unit in self.units], "status": self.status,
                    "totals": self.totals()}
        documents.validate(documents.RUN_SUMMARY, document)
        return document
