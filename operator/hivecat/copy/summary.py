"""The run summary: units done, skipped and failed (with reasons), files, bytes, seconds, engine."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TextIO

from hivecat.copy import documents

DONE, SKIPPED, FAILED = "done", "skipped", "failed"
WRITE_UNITS = 1000  # write_json's units at a time


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
        document = {**self._head(), "units": [dict(vars(unit)) for unit in self.units]}
        documents.validate(documents.RUN_SUMMARY, document)
        return document

    def write_json(self, stream: TextIO) -> None:
        """to_dict's document as JSON, a unit a line, written and validated WRITE_UNITS units at a time: the
        document of 100,000 units and its text, indented in one piece, took 230 MB at once."""
        head = self._head()
        documents.validate(documents.RUN_SUMMARY, {**head, "units": []})
        stream.write(json.dumps(head, indent=2)[:-2] + ',\n  "units": [')  # the head without its closing "\n}"
        for start in range(0, len(self.units), WRITE_UNITS):
            units = [dict(vars(unit)) for unit in self.units[start:start + WRITE_UNITS]]
            documents.validate(documents.RUN_SUMMARY, {**head, "units": units})
            stream.write(("," if start else "") + ",".join("\n    " + json.dumps(unit) for unit in units))
        stream.write("\n  ]\n}\n")

    def _head(self) -> dict[str, Any]:
        return {"version": documents.VERSION, **{k: v for k, v in vars(self).items() if k != "units"},
                "status": self.status, "totals": self.totals()}
