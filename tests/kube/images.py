"""The images the real node runs and e2e/test_image.py checks, built on this machine by scripts/build-image.sh
with podman and runc (no registry, no Docker engine), and podman itself as the tests call it."""

from __future__ import annotations

import os
import subprocess

from kube.controlplane import REPO

IMAGE_SCRIPT = REPO / "scripts" / "build-image.sh"
CONTAINERS_CONF = REPO / "scripts" / "containers.conf"  # runc, no default ulimits (see the file)


def build_image(name: str) -> str:
    """scripts/build-image.sh NAME: the image's reference in podman's store (built only when its inputs change)."""
    done = subprocess.run(["bash", str(IMAGE_SCRIPT), name], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{IMAGE_SCRIPT.name} {name} failed:\n{done.stderr[-6000:]}")
    return done.stdout.strip().splitlines()[-1]


def podman(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)})
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done
