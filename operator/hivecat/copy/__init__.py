"""The copy engine (`hivecat distcp`): DistCp -update with per-unit atomic commit, verified and resumable.

Modules, one job each: storage (URIs, filesystems, S3 settings), plan / manifest / summary (the
versioned documents, schemas in schemas/), listing, transfer (one file), s3copy (server-side S3
copies), engines (local thread pool, Spark), commit (putting a unit into place), copier (the run).
Domain code only: no kopf.
"""

from hivecat.copy.copier import Copier, CopyOptions
from hivecat.copy.engines import LocalEngine, SparkEngine
from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import Plan, Unit, load_plan, plan_from_document, single_unit_plan
from hivecat.copy.storage import S3Settings, Storage

__all__ = ["Copier", "CopyInputError", "CopyOptions", "LocalEngine", "Plan", "S3Settings", "SparkEngine",
           "Storage", "Unit", "load_plan", "plan_from_document", "single_unit_plan"]
