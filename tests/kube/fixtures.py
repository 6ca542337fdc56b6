"""The control plane as pytest fixtures, for every suite that talks to it (tests/operator, e2e/): one control
plane per test session (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a kwok node; see
README.md), kubectl and helm pointed at it, and hivecat's CRDs applied the way a user applies them.

Importing this module points KUBECONFIG at the control plane's admin kubeconfig before anything reads it: nothing
that imports it may fall back to the user's own cluster."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

KUBE_DIR = Path(tempfile.mkdtemp(prefix="hivecat-k8s-"))
os.environ["KUBECONFIG"] = str(KUBE_DIR / "admin.kubeconfig")

from kube.api import Api  # noqa: E402
from kube.clients import REPO, Client, helm as helm_client, kubectl as kubectl_client  # noqa: E402
from kube.controlplane import ControlPlane  # noqa: E402
from support.services import START_SECONDS  # noqa: E402

CRD_DIR = REPO / "crds"
EXAMPLES_DIR = REPO / "examples"
TIMINGS: dict[str, float] = {}  # printed at the end of the run: closing notes report these numbers


def report_timings(terminalreporter: pytest.TerminalReporter, tier: str) -> None:
    if TIMINGS:
        shown = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in TIMINGS.items())
        terminalreporter.write_line(f"{tier} timings: {shown}")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane(workdir=KUBE_DIR) as plane:
        START_SECONDS["kubernetes control plane"] = round(plane.start_seconds, 1)
        TIMINGS["control plane start"] = plane.start_seconds
        yield plane


@pytest.fixture(scope="session")
def api(control_plane: ControlPlane) -> Api:
    return Api(control_plane.url, control_plane.admin_session())


@pytest.fixture(scope="session")
def kubectl(control_plane: ControlPlane) -> Client:
    return kubectl_client(control_plane.admin_kubeconfig, KUBE_DIR / "kubectl-cache")


@pytest.fixture(scope="session")
def helm(control_plane: ControlPlane) -> Client:
    return helm_client(control_plane.admin_kubeconfig, KUBE_DIR / "helm")


@pytest.fixture(scope="session")
def crds(kubectl: Client) -> None:
    """hivecat's CRDs, applied from crds/ the way a user installs them; the API server checks them."""
    kubectl("apply", "--server-side", "-f", str(CRD_DIR))  # as the README installs them (and upgrades them)
    kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", str(CRD_DIR))
