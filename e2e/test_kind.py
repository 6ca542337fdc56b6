"""Runs e2e/run.sh on a real kind cluster with the built image; skipped, with the concrete reason, where that cannot
run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.kind
RUN_SH = Path(__file__).with_name("run.sh")


def _missing_prerequisite() -> str | None:
    for binary in ("docker", "kind", "kubectl", "helm"):
        if shutil.which(binary) is None:
            return f"`{binary}` is not installed"
    info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
    if info.returncode != 0:
        reason = (info.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine is reachable (`docker info`: {reason})"
    return None


def test_kind_end_to_end() -> None:
    missing = _missing_prerequisite()
    if missing:
        pytest.skip(f"kind end-to-end needs Docker + kind + kubectl + helm: {missing}")
    result = subprocess.run(["bash", str(RUN_SH)], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
