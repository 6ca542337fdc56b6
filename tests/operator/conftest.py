"""Operator tier: the real `hivecat run` process and the real kubectl against tests/kube's local API server."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# kopf and the `kubernetes` client read KUBECONFIG when first imported/configured: set it before either is.
_KUBE_DIR = Path(tempfile.mkdtemp(prefix="hivecat-kube-"))
os.environ["KUBECONFIG"] = str(_KUBE_DIR / "kubeconfig")

from kube.api import Api  # noqa: E402
from kube.kubeconfig import write_kubeconfig  # noqa: E402
from kube.kubectl import REPO, Kubectl, find_kubectl  # noqa: E402
from kube.operator import OperatorProcess  # noqa: E402
from kube.server import RunningServer  # noqa: E402
from support.services import START_SECONDS  # noqa: E402

GROUP = "hivecatalog.io"
CRD_DIR = REPO / "crds"
EXAMPLES_DIR = REPO / "examples"
TIMINGS: dict[str, float] = {}  # printed at the end of the run: the issue asks for these numbers


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.stash.setdefault(_FAILED, True)


_FAILED = pytest.StashKey[bool]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        shown = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in TIMINGS.items())
        terminalreporter.write_line(f"operator harness timings: {shown}")


@pytest.fixture(scope="session")
def kube_server() -> Iterator[RunningServer]:
    with RunningServer() as server:
        write_kubeconfig(Path(os.environ["KUBECONFIG"]), server.url)
        START_SECONDS["local kube API server"] = round(server.start_seconds, 3)
        TIMINGS["API server start"] = server.start_seconds
        yield server
    shutil.rmtree(_KUBE_DIR, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_server_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    """A harness bug (an exception inside the server) fails the test that hit it, with the traceback."""
    if "kube_server" not in request.fixturenames:
        yield
        return
    server: RunningServer = request.getfixturevalue("kube_server")
    seen = len(server.kmock.faults)
    yield
    assert server.kmock.faults[seen:] == [], "the local API server failed:\n" + "\n".join(server.kmock.faults[seen:])


@pytest.fixture(scope="session")
def api(kube_server: RunningServer) -> Api:
    return Api(kube_server.url)


@pytest.fixture(scope="session")
def kubectl(kube_server: RunningServer) -> Kubectl:
    return Kubectl(Path(os.environ["KUBECONFIG"]), _KUBE_DIR / "kubectl-cache", find_kubectl())


@pytest.fixture(scope="session")
def crds(kubectl: Kubectl) -> None:
    """hivecat's CRDs, applied from crds/ the way a user installs them (schemas are not validated here)."""
    kubectl("apply", "--validate=false", "-f", str(CRD_DIR))
    kubectl("wait", "--for=condition=Established", "--timeout=10s", "-f", str(CRD_DIR))


@pytest.fixture
def namespace(api: Api) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    api.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def run_operator(request: pytest.FixtureRequest, kube_server: RunningServer, crds: None,
                 tmp_path: Path) -> Iterator[Callable[[str | None], OperatorProcess]]:
    """Start `hivecat run --standalone` for one namespace (or None: -A); stopped after the test, and its log
    printed if the test failed."""
    started: list[OperatorProcess] = []

    def start(namespace: str | None) -> OperatorProcess:
        operator = OperatorProcess(Path(os.environ["KUBECONFIG"]), tmp_path / f"operator-{len(started)}.log",
                                   namespace)
        started.append(operator)
        watches = kube_server.kmock.watches
        operator.start(lambda: watches[(GROUP, "hivecatalogs", namespace)] > 0)
        TIMINGS.setdefault("operator start until watching", operator.ready_seconds)
        return operator

    yield start
    for operator in started:
        code = operator.stop()
        if request.node.stash.get(_FAILED, False) or code not in (0, -15):
            print(f"---- operator log ({' '.join(operator.argv)}), exit code {code} ----\n{operator.log()}")
