"""e2e/: the kind flow (test_kind.py); on this machine's control plane with a real node, the same flow
(test_here.py), the image as a container (test_image.py) and the operator's pods' files (test_pod_files.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kube.clients import Client
from kube.controlplane import NODE_NAME as KWOK_NODE, ControlPlane
from kube.fixtures import KUBE_DIR, TIMINGS, kubectl, report_timings  # noqa: F401  (kubectl: a fixture)
from kube.images import build_image
from kube.node import BRIDGE_ADDRESS, RealNode, create_bridge, delete_bridge


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    report_timings(terminalreporter, "e2e")


def _built(name: str) -> str:
    """scripts/build-image.sh NAME, timed: minutes when the image's inputs changed, else about a second."""
    began = time.monotonic()
    image = build_image(name)
    TIMINGS[f"{name} image build (or cache check)"] = time.monotonic() - began
    return image


@pytest.fixture(scope="session")
def hivecat_image() -> str:
    """The image from this checkout: what the chart's Deployment and the copy Jobs run."""
    return _built("hivecat")


@pytest.fixture(scope="session")
def metastore_image() -> str:
    """Hive Metastore 3.1.3 from Maven Central's jars, laid out as apache/hive (tests/kube/metastore-image)."""
    return _built("metastore")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """The test control plane with its API server on the pod bridge's address (pods reach it through the
    `kubernetes` Service; kubectl and helm here use that address too). Needs root, as the node does."""
    create_bridge()
    try:
        with ControlPlane(workdir=KUBE_DIR, address=BRIDGE_ADDRESS) as plane:
            TIMINGS["control plane start"] = plane.start_seconds
            yield plane
    finally:
        delete_bridge()


@pytest.fixture(scope="session")
def real_node(control_plane: ControlPlane, kubectl: Client, hivecat_image: str,
              metastore_image: str) -> Iterator[RealNode]:
    with RealNode(control_plane, images=(hivecat_image, metastore_image)) as node:
        TIMINGS["real node start (images loaded)"] = node.start_seconds
        kubectl("cordon", KWOK_NODE)  # every pod of this flow runs for real
        yield node
