"""Operator tier: the real `hivecat run` process, kubectl and helm against a real control plane (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and a kwok node; see tests/kube/README.md).
One control plane per test session, one namespace per test; the operator runs as the chart's
ServiceAccount with exactly the RBAC the chart grants."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kube.fixtures import (CRD_DIR, EXAMPLES_DIR, KUBE_DIR, TIMINGS, api, control_plane, crds, helm,  # noqa: F401
                           kubectl, report_timings)  # (fixtures by name; test modules import the constants from here)
from kube.api import Api
from kube.clients import Client
from kube.controlplane import ControlPlane
from kube.identity import operator_kubeconfig as make_operator_kubeconfig
from kube.operator import OperatorProcess
from support.catalog_db import journal, metastore_db  # noqa: F401  (fixtures by name)
from support.policy import grant, lab, remove_policies
from support.services import mariadb_server, moto, moto_server, scratch_mariadb  # noqa: F401

from hivecat.kinds import GROUP, HIVE_CATALOG, VERSION  # noqa: F401  (test modules import these from here)

HIVE_CATALOG_RESOURCE = f"{HIVE_CATALOG.plural}.{VERSION}.{GROUP}"  # as kopf names it in its log
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if outcome.get_result().failed:
        item.stash[_FAILED] = True


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    report_timings(terminalreporter, "operator tier")


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
            return make_operator_kubeconfig(kubectl, helm, control_plane.url, ca, KUBE_DIR / "cluster-wide.kubeconfig",
                                            "hivecat-cw", "hivecat-system", "clusterWide=true")
        return make_operator_kubeconfig(kubectl, helm, control_plane.url, ca, KUBE_DIR / "operator.kubeconfig",
                                        "hivecat", "hivecat-system", f"watchNamespaces={{{namespace}}}")
    return make


@pytest.fixture
def namespace(api: Api, kubectl: Client) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    api.request("DELETE", f"/api/v1/namespaces/{name}")  # the namespace controller empties it in the background
    remove_policies(kubectl, name)  # the test's CatalogPolicies (cluster-scoped)


@pytest.fixture
def second_namespace(api: Api, kubectl: Client) -> Iterator[str]:
    """Another team's namespace. Ask for it after `run_operator`, so that its resources go while the operator
    (watching "<namespace>,<second_namespace>") still runs to release their finalizers."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    kubectl("delete", "-n", name, "tablereplicas,clusterstorages,hivecatalogs", "--all", "--wait", "--timeout=60s",
            check=False)
    api.request("DELETE", f"/api/v1/namespaces/{name}")
    remove_policies(kubectl, name)


@pytest.fixture
def run_operator(request: pytest.FixtureRequest, crds: None, operator_kubeconfig: Callable[[str | None], Path],
                 tmp_path: Path, kubectl: Client, namespace: str) -> Iterator[Callable[..., OperatorProcess]]:
    """Start `hivecat run --standalone` as the chart's ServiceAccount for one namespace (or None: -A); it is
    stopped after the test (the test's hivecat resources deleted first), and its log printed if the test
    failed. `env`: extra environment for the process (e.g. HIVECAT_RECHECK_SECONDS). `grants`: what the
    namespace's CatalogPolicy grants on top of support.policy.lab() (storage, Glue, metastore addresses); None
    applies no policy (a test of the policy itself)."""
    started: list[OperatorProcess] = []

    def start(namespace: str | None, env: dict[str, str] | None = None,
              grants: dict | None = {}) -> OperatorProcess:  # noqa: B006 - read only
        for each in (namespace or "").split(",") if grants is not None else ():
            if each:
                grant(kubectl, each, "lab", **lab(**grants))
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
