"""Where one scenario runs: a fresh control plane of the test harness (etcd, kube-apiserver with its audit log,
controller-manager, scheduler, a kwok node), hivecat's CRDs applied as a user applies them, moto (Glue and S3),
the chart's cluster-wide RBAC with a token for its ServiceAccount, and the real `hivecat run` process started as
the chart starts it. Everything started here is stopped when the `with` block ends, also on failure or ^C, and
the work directory is removed (the benchmark keeps the operator's log elsewhere first)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from kube.api import Api
from kube.clients import REPO, Client, helm as helm_client, kubectl as kubectl_client
from kube.controlplane import ControlPlane
from kube.identity import operator_kubeconfig
from kube.operator import HIVECAT, OTHER_BUILD_ENV, OperatorProcess

from hivecat.local.moto import moto_server
from hivecat.local.net import free_port

CRD_DIR = REPO / "crds"
RELEASE, RELEASE_NAMESPACE = "hivecat-cw", "hivecat-system"  # as tests/operator/conftest.py names the cluster-wide one
OPERATOR_USER_PREFIX = f"system:serviceaccount:{RELEASE_NAMESPACE}:"  # in the audit log


@dataclass
class Bench:
    """Use as `with Bench(workdir) as bench:`; `bench.start_operator()` starts `hivecat run`."""

    workdir: Path
    plane: ControlPlane | None = None
    moto_endpoint: str = ""
    region: str = "us-east-1"
    kubectl: Client | None = None
    operator_config: Path | None = None
    operator: OperatorProcess | None = None
    metrics_port: int = 0
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _local: threading.local = field(default_factory=threading.local)

    def __enter__(self) -> Bench:
        try:
            self.plane = self._stack.enter_context(ControlPlane(workdir=self.workdir / "k8s"))
            self.moto_endpoint = self._stack.enter_context(moto_server(self.workdir / "moto.log"))
            self.kubectl = kubectl_client(self.plane.admin_kubeconfig, self.workdir / "kubectl-cache")
            helm = helm_client(self.plane.admin_kubeconfig, self.workdir / "helm")
            self.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
            self.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(CRD_DIR))
            assert self.plane.pki is not None
            self.operator_config = operator_kubeconfig(
                self.kubectl, helm, self.plane.url, self.plane.pki.ca_cert, self.workdir / "operator.kubeconfig",
                RELEASE, RELEASE_NAMESPACE, "clusterWide=true")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the operator, then moto and the control plane; remove the work directory (keep() what you need
        out of it first)."""
        try:
            self.stop_operator()
        finally:
            try:
                self._stack.close()
            finally:
                shutil.rmtree(self.workdir, ignore_errors=True)

    # --- the API, as the admin ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self.plane is not None
        return self.plane.url

    @property
    def audit_log(self) -> Path:
        assert self.plane is not None and self.plane.audit_log is not None
        return self.plane.audit_log

    def session(self) -> requests.Session:
        """An admin session of this thread's own (requests sessions are not shared between threads here)."""
        found = getattr(self._local, "session", None)
        if found is None:
            assert self.plane is not None
            found = self._local.session = self.plane.admin_session()
        return found

    def api(self) -> Api:
        return Api(self.url, self.session())

    def create_all(self, items: Iterable[tuple[str, dict[str, Any]]], threads: int = 8) -> int:
        """POST each (collection path, object); 409 (already there) counts as done. The number created."""
        from concurrent.futures import ThreadPoolExecutor

        def post(item: tuple[str, dict[str, Any]]) -> int:
            path, body = item
            for attempt in range(5):
                response = self.api().request("POST", path, body)
                if response.status_code in (200, 201):
                    return 1
                if response.status_code == 409:
                    return 0
                if response.status_code in (429, 500, 503) and attempt < 4:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                raise AssertionError(f"POST {path} -> {response.status_code}: {response.text[:500]}")
            return 0
        with ThreadPoolExecutor(threads) as pool:
            return sum(pool.map(post, list(items)))

    # --- the operator --------------------------------------------------------------------------------------
    def start_operator(self, log_path: Path, env: dict[str, str]) -> OperatorProcess:
        """`hivecat run` as the chart's Deployment runs it (clusterWide, log level info), as the chart's
        ServiceAccount, with /metrics on a free port. Returns once the process runs (not when kopf is ready:
        the benchmark times from here)."""
        assert self.operator_config is not None
        self.metrics_port = free_port()
        state = self.workdir / "operator-state"
        state.mkdir(exist_ok=True)
        # This checkout's sources (or HIVECAT_TEST_OPERATOR_PYTHONPATH's, as in the tests), not whichever checkout
        # the venv's editable install points at: PYTHONPATH comes before the install's .pth.
        python_path = os.pathsep.join(p for p in (str(operator_source()), os.environ.get("PYTHONPATH", "")) if p)
        operator = OperatorProcess(
            self.operator_config, log_path, None,
            env={"PYTHONPATH": python_path,
                 "HIVECAT_METRICS_PORT": str(self.metrics_port), "HIVECAT_S3_ENDPOINT": self.moto_endpoint,
                 "AWS_DEFAULT_REGION": self.region, "AWS_EC2_METADATA_DISABLED": "true",
                 "XDG_STATE_HOME": str(state), **env},
            command=(str(HIVECAT), "run", "--standalone", "--namespace=!kube-system"))
        self.operator = operator
        operator.start(lambda: True)
        return operator

    def stop_operator(self) -> int | None:
        if self.operator is None:
            return None
        code = self.operator.stop(grace=30)
        return code

    def operator_alive(self) -> bool:
        return self.operator is not None and self.operator.process is not None and \
            self.operator.process.poll() is None

    def operator_peak_rss_mb(self) -> float:
        """VmHWM of the operator process (its peak resident set since it started), in MB."""
        assert self.operator is not None and self.operator.process is not None
        for line in Path(f"/proc/{self.operator.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return -1.0

    def operator_rss_mb(self) -> float:
        assert self.operator is not None and self.operator.process is not None
        for line in Path(f"/proc/{self.operator.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return -1.0

    def operator_threads(self) -> int:
        assert self.operator is not None and self.operator.process is not None
        for line in Path(f"/proc/{self.operator.process.pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
        return -1

    def operator_cpu_seconds(self) -> float:
        """User + system CPU seconds the operator process used so far (its threads included)."""
        assert self.operator is not None and self.operator.process is not None
        fields = Path(f"/proc/{self.operator.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def keep(self, source: Path, target_dir: Path | None, name: str) -> Path | None:
        """Copy a log out of the work directory (which goes with the run)."""
        if target_dir is None or not source.exists():
            return None
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / name
        shutil.copyfile(source, target)
        return target


def operator_source() -> Path:
    """The `operator/` directory the operator process imports hivecat from: this checkout's, or the other
    build's that HIVECAT_TEST_OPERATOR_PYTHONPATH names (tests/kube/operator.py)."""
    other = os.environ.get(OTHER_BUILD_ENV)
    return Path(other.split(os.pathsep)[0]) if other else REPO / "operator"


def new_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="hivecat-operator-scale-"))
