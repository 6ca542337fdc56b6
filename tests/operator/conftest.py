"""Operator tier: the real `hivecat run` process, kubectl and helm against a real control plane (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and a kwok node; see tests/kube/README.md).
One control plane per test session, one namespace per test; the operator runs as the chart's
ServiceAccount with exactly the RBAC the chart grants."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

# Nothing in this tier may fall back to the user's own cluster: point KUBECONFIG at the test control plane's
# admin kubeconfig before anything reads it.
_KUBE_DIR = Path(tempfile.mkdtemp(prefix="hivecat-k8s-"))
os.environ["KUBECONFIG"] = str(_KUBE_DIR / "admin.kubeconfig")

from kube.api import Api  # noqa: E402
from kube.clients import REPO, Client, helm as helm_client, kubectl as kubectl_client  # noqa: E402
from kube.controlplane import ControlPlane  # noqa: E402
from kube.identity import operator_kubeconfig as make_operator_kubeconfig  # noqa: E402
from kube.operator import OperatorProcess  # noqa: E402
from support.services import (START_SECONDS, mariadb_server, moto, moto_server, scratch_mariadb,  # noqa: E402,F401
                              unique_name)  # (fixtures by name)

from hivecat.kinds import GROUP, HIVE_CATALOG, VERSION  # noqa: E402
from hivecat.local.scratch_db import drop_database  # noqa: E402  (test modules import these from here)

CRD_DIR = REPO / "crds"
EXAMPLES_DIR = REPO / "examples"
HIVE_CATALOG_RESOURCE = f"{HIVE_CATALOG.plural}.{VERSION}.{GROUP}"  # as kopf names it in its log
TIMINGS: dict[str, float] = {}  # printed at the end of the run: the closing note reports these numbers
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if outcome.get_result().failed:
        item.stash[_FAILED] = True


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        shown = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in TIMINGS.items())
        terminalreporter.write_line(f"operator tier timings: {shown}")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane(workdir=_KUBE_DIR) as plane:
        START_SECONDS["kubernetes control plane"] = round(plane.start_seconds, 1)
        TIMINGS["control plane start"] = plane.start_seconds
        yield plane


@pytest.fixture(scope="session")
def api(control_plane: ControlPlane) -> Api:
    return Api(control_plane.url, control_plane.admin_session())


@pytest.fixture(scope="session")
def kubectl(control_plane: ControlPlane) -> Client:
    return kubectl_client(control_plane.admin_kubeconfig, _KUBE_DIR / "kubectl-cache")


@pytest.fixture(scope="session")
def helm(control_plane: ControlPlane) -> Client:
    return helm_client(control_plane.admin_kubeconfig, _KUBE_DIR / "helm")


@pytest.fixture(scope="session")
def crds(kubectl: Client) -> None:
    """hivecat's CRDs, applied from crds/ the way a user installs them; the API server checks them."""
    kubectl("apply", "--server-side", "-f", str(CRD_DIR))  # as the README installs them (and upgrades them)
    kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", str(CRD_DIR))


@pytest.fixture
def operator_kubeconfig(control_plane: ControlPlane, kubectl: Client, helm: Client,
                        crds: None) -> Callable[[str | None], Path]:
    """A kubeconfig for the operator as the chart's ServiceAccount, with the RBAC the chart renders to watch
    `namespace` (its default scope: Roles in the watched namespaces), or with `clusterWide=true` for None
    (another release, so the cluster-wide rules never leak into the namespaced identity's tests)."""
    assert control_plane.pki is not None
    ca = control_plane.pki.ca_cert

    def make(namespace: str | None) -> Path:
        if namespace is None:
            return make_operator_kubeconfig(kubectl, helm, control_plane.url, ca, _KUBE_DIR / "cluster-wide.kubeconfig",
                                            "hivecat-cw", "hivecat-system", "clusterWide=true")
        return make_operator_kubeconfig(kubectl, helm, control_plane.url, ca, _KUBE_DIR / "operator.kubeconfig",
                                        "hivecat", "hivecat-system", f"watchNamespaces={{{namespace}}}")
    return make


@pytest.fixture
def namespace(api: Api) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    api.request("DELETE", f"/api/v1/namespaces/{name}")  # the namespace controller empties it in the background


@pytest.fixture
def run_operator(request: pytest.FixtureRequest, crds: None, operator_kubeconfig: Callable[[str | None], Path],
                 tmp_path: Path, kubectl: Client, namespace: str) -> Iterator[Callable[..., OperatorProcess]]:
    """Start `hivecat run --standalone` as the chart's ServiceAccount for one namespace (or None: -A); it is
    stopped after the test (the test's hivecat resources deleted first), and its log printed if the test
    failed. `env`: extra environment for the process
    (e.g. HIVECAT_RECHECK_SECONDS)."""
    started: list[OperatorProcess] = []

    def start(namespace: str | None, env: dict[str, str] | None = None) -> OperatorProcess:
        operator = OperatorProcess(operator_kubeconfig(namespace), tmp_path / f"operator-{len(started)}.log",
                                   namespace, env=dict(env or {}))
        started.append(operator)
        operator.start(lambda: operator.watching(HIVE_CATALOG_RESOURCE))
        TIMINGS.setdefault("operator start until watching", operator.ready_seconds)
        return operator

    yield start
    # The test's resources go while an operator still runs to release their finalizers (else the namespace
    # would hang in Terminating, and an operator of a later test watching every namespace would meet them).
    if any(operator.process is not None and operator.process.poll() is None for operator in started):
        kubectl("delete", "-n", namespace, "tablereplicas,clusterstorages,hivecatalogs", "--all", "--wait",
                "--timeout=60s", check=False)
    for operator in started:
        code = operator.stop()
        if request.node.stash.get(_FAILED, False) or code not in (0, -15):
            print(f"---- operator log ({' '.join(operator.argv)}), exit code {code} ----\n{operator.log()}")


@pytest.fixture
def metastore_db(scratch_mariadb: str) -> Iterator[str]:  # noqa: F811
    """A scratch MariaDB database reached as a user of its own, whose password is like no other string in the
    test (so finding it in an object, a status or a log means a leak). The URL carries user and password."""
    url = sa.make_url(scratch_mariadb)
    user, password = unique_name("hc_op"), f"pw-{uuid.uuid4().hex}"
    hosts = ("localhost", "127.0.0.1", "%")
    admin = sa.create_engine(scratch_mariadb)
    with admin.begin() as conn:
        for host in hosts:
            conn.execute(sa.text(f"CREATE USER '{user}'@'{host}' IDENTIFIED BY '{password}'"))
            conn.execute(sa.text(f"GRANT ALL PRIVILEGES ON `{url.database}`.* TO '{user}'@'{host}'"))
    yield url.set(username=user, password=password).render_as_string(hide_password=False)
    with admin.begin() as conn:
        for host in hosts:
            conn.execute(sa.text(f"DROP USER IF EXISTS '{user}'@'{host}'"))
    admin.dispose()


@pytest.fixture
def journal(mariadb_server: str, metastore_db: str) -> Iterator[str]:  # noqa: F811
    """A database on the metastore's server for the relocation journal, which the catalog's user may write; the
    operator is given it as HIVECAT_JOURNAL_SCHEMA (failovers and repairs on a SQL catalog are journaled there)."""
    name, user = unique_name("hc_tr_journal"), sa.make_url(metastore_db).username
    admin = sa.create_engine(mariadb_server)
    with admin.begin() as conn:
        for host in ("localhost", "127.0.0.1", "%"):
            conn.execute(sa.text(f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{user}'@'{host}'"))
    admin.dispose()
    yield name
    drop_database(mariadb_server, name)
