"""The copy engine (`hivecat distcp`): DistCp -update with per-unit atomic commit, verified and resumable.

Modules, one job each: storage (URIs, filesystems, S3 settings), local_paths (local paths opened without
following a link) and localfs (file:// as a pyarrow filesystem on them), plan / manifest / summary (the
versioned documents, schemas in schemas/), owner (whose a copy is, and who may write it), listing, checksum
(CRC32C), transfer (one file), s3copy (server-side S3 copies), engines (local thread pool, Spark), commit
(putting a unit into place), copier (the run). Domain code only: no kopf.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# name -> module. Imported on first use (PEP 562), so that the CLI's other commands and `--help` do
# not pay for pyarrow and jsonschema.
_EXPORTS = {"Copier": "copier", "CopyOptions": "copier", "LocalEngine": "engines", "SparkEngine": "engines",
            "CopyInputError": "errors", "Owner": "owner", "CopyPlan": "plan", "Unit": "plan", "load_plan": "plan",
            "plan_from_document": "plan", "single_unit_plan": "plan", "S3Settings": "storage", "Storage": "storage"}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from hivecat.copy.copier import Copier, CopyOptions
    from hivecat.copy.engines import LocalEngine, SparkEngine
    from hivecat.copy.errors import CopyInputError
    from hivecat.copy.owner import Owner
    from hivecat.copy.plan import CopyPlan, Unit, load_plan, plan_from_document, single_unit_plan
    from hivecat.copy.storage import S3Settings, Storage


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
