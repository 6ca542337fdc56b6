"""A copy run (workloads.copy_job.CopyRun) for the launcher tests, and secret values that must never appear in
the objects built from it."""

from __future__ import annotations

import dataclasses
from typing import Any

from hivecat.workloads.copy_job import CopyRun

DIGEST = "sha256:" + "ab" * 32
SECRET_VALUES = ("AKIAEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
RUN_ID = "20250101T000000Z-abc123"
PLAN_URI = f"s3://dr/warehouse/.hivecat/plans/data/orders/{RUN_ID}.json"


def copy_run(**changes: Any) -> CopyRun:
    base = CopyRun(replica="orders", namespace="data", catalog="analytics", secondary="s3-dr", run_id=RUN_ID,
                   plan_uri=PLAN_URI, plan_digest=DIGEST, image="reg.example/hivecat:1")
    return dataclasses.replace(base, **changes)
