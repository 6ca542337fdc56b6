"""A real Kubernetes control plane on 127.0.0.1, started the way envtest starts one, plus Kubernetes'
controllers and a kwok node: etcd, kube-apiserver (TLS, RBAC, service-account tokens), kube-controller-
manager, kube-scheduler and kwok. Binaries come from scripts/build-control-plane.sh (built from Go modules
into a cache outside the checkout, or taken from $KUBEBUILDER_ASSETS)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from hivecat.local.processes import stop_process_group
from kube.kubeconfig import write_kubeconfig
from kube.pki import Pki, make_pki

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "build-control-plane.sh"
KWOK_CONFIG = Path(__file__).with_name("kwok.yaml")
SERVICE_CIDR = "10.96.0.0/16"  # routed only on the real node (tests/kube/node.py runs kube-proxy)
SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service, first address of the range
NODE_NAME = "kwok-node-0"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def control_plane_bin() -> Path:
    """The directory of the five binaries; builds what is missing (minutes the first time, then seconds)."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT.name} failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _session() -> requests.Session:
    """A session that trusts only what it is given: with trust_env, REQUESTS_CA_BUNDLE (set on these
    machines) would replace the test CA, and a proxy variable could route loopback traffic away."""
    session = requests.Session()
    session.trust_env = False
    return session


START_ATTEMPTS = 3
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
"""


@dataclass
class Component:
    name: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("wb") as log:
            # Own process group: a test run interrupted with ^C must not leave etcd behind.
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}")

    def stop(self, grace: float = 10) -> None:
        stop_process_group(self.process, grace)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


@dataclass
class ControlPlane:
    """Start with `with ControlPlane() as cp:`; `cp.admin_kubeconfig` is a system:masters identity."""
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="hivecat-k8s-")))
    bin_dir: Path | None = None
    components: list[Component] = field(default_factory=list)
    url: str = ""
    pki: Pki | None = None
    start_seconds: float = 0.0
    audit_log: Path | None = None  # JSON lines: every request of a service account (AUDIT_POLICY)
    # Where the API server listens. Loopback unless pods must reach it: the real node's pods do, through the
    # `kubernetes` Service, at the node bridge's address (tests/kube/node.py); a pod's 127.0.0.1 is its own.
    address: str = "127.0.0.1"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    def __enter__(self) -> ControlPlane:
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self.start()
                return self
            except RuntimeError as error:
                self.stop()
                # Ports are picked free, then bound by another process: with the other tiers starting their
                # services at the same moment, another process can take one in between. Start again on others.
                if "address already in use" not in str(error) or attempt == START_ATTEMPTS:
                    raise
                shutil.rmtree(self.workdir / "etcd", ignore_errors=True)
            except BaseException:
                self.stop()
                raise
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _component(self, name: str, *args: str) -> Component:
        assert self.bin_dir is not None
        component = Component(name, [str(self.bin_dir / name), *args], self.workdir / f"{name}.log")
        self.components.append(component)
        component.start()
        return component

    def start(self) -> None:
        self.bin_dir = self.bin_dir or control_plane_bin()
        began = time.monotonic()
        self.pki = pki = make_pki(self.workdir / "pki", SERVICE_IP, self.address)
        etcd_client, etcd_peer, secure_port = free_port(), free_port(), free_port()
        self.url = f"https://{self.address}:{secure_port}"
        write_kubeconfig(self.admin_kubeconfig, self.url, pki.ca_cert,
                         {"client-certificate": str(pki.admin_cert), "client-key": str(pki.admin_key)})

        etcd = self._component(
            "etcd", f"--data-dir={self.workdir / 'etcd'}", "--name=default",
            f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
            f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=default=http://127.0.0.1:{etcd_peer}",
            "--unsafe-no-fsync",  # throwaway data: durability buys nothing in tests
            "--log-level=warn")
        self._wait(f"http://127.0.0.1:{etcd_client}/health", [etcd], verify=False, cert=None, timeout=30)

        # Every request a service account makes (the operator runs as one) is audited, so the operator tier can
        # compare what the operator used with what the chart grants (tests/operator/test_zz_rbac_audit.py).
        self.audit_log = self.workdir / "audit.log"
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        apiserver = self._component(
            "kube-apiserver", f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-format=json",
            "--audit-log-maxsize=0",
            f"--bind-address={self.address}", f"--advertise-address={self.address}", f"--secure-port={secure_port}",
            # the `kubernetes` Service cannot point at a loopback address; elsewhere it points at the API server
            f"--endpoint-reconciler-type={'none' if self.address == '127.0.0.1' else 'lease'}",
            f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}", "--authorization-mode=Node,RBAC",
            # `kubectl logs` of a real node's pods: the admin identity, which the kubelet's webhook authorizes
            f"--kubelet-client-certificate={pki.admin_cert}", f"--kubelet-client-key={pki.admin_key}",
            "--kubelet-preferred-address-types=InternalIP",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}", f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true",
            f"--cert-dir={self.workdir / 'apiserver-certs'}", "--v=1")
        self._wait(f"{self.url}/readyz", [etcd, apiserver], timeout=60)

        admin = str(self.admin_kubeconfig)
        self._component(
            "kube-controller-manager", f"--kubeconfig={admin}", f"--authentication-kubeconfig={admin}",
            f"--authorization-kubeconfig={admin}", "--leader-elect=false", "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}", f"--cert-dir={self.workdir / 'kcm-certs'}",
            f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca_cert}",
            "--use-service-account-credentials=false", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--concurrent-gc-syncs=5", "--v=1")
        self._component(
            "kube-scheduler", f"--kubeconfig={admin}", f"--authentication-kubeconfig={admin}",
            f"--authorization-kubeconfig={admin}", "--leader-elect=false", "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}", f"--cert-dir={self.workdir / 'scheduler-certs'}", "--v=1")
        self._component(
            "kwok", f"--kubeconfig={admin}", f"--config={KWOK_CONFIG}",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
            f"--server-address=127.0.0.1:{free_port()}")
        self._create_node()
        self._wait_until_usable(timeout=60)
        self.start_seconds = time.monotonic() - began

    def admin_session(self) -> requests.Session:
        assert self.pki is not None
        session = _session()
        session.verify = str(self.pki.ca_cert)
        session.cert = (str(self.pki.admin_cert), str(self.pki.admin_key))
        return session

    def _wait(self, url: str, watched: list[Component], timeout: float, verify: bool | str | None = None,
              cert: tuple[str, str] | None | bool = True) -> None:
        assert self.pki is not None
        session = _session()
        session.verify = str(self.pki.ca_cert) if verify is None else verify
        if cert is True:
            session.cert = (str(self.pki.admin_cert), str(self.pki.admin_key))
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for component in watched:
                component.check_alive()
            try:
                response = session.get(url, timeout=2)
                if response.ok:
                    return
                last = f"{response.status_code}: {response.text[-500:]}"
            except requests.RequestException as error:
                last = str(error)
            time.sleep(0.1)
        logs = "\n".join(f"--- {c.name}\n{c.log_tail()}" for c in watched)
        raise RuntimeError(f"{url} not ready after {timeout}s ({last})\n{logs}")

    def _create_node(self) -> None:
        node = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE_NAME, "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                         "labels": {"kubernetes.io/hostname": NODE_NAME, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "type": "kwok"}},
            "spec": {},
        }
        response = self.admin_session().post(f"{self.url}/api/v1/nodes", json=node, timeout=10)
        assert response.status_code == 201, response.text

    def _wait_until_usable(self, timeout: float) -> None:
        """The node is Ready (kwok runs) and the `default` ServiceAccount exists (controller-manager runs,
        so pods can be admitted)."""
        session = self.admin_session()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for component in self.components:
                component.check_alive()
            node = session.get(f"{self.url}/api/v1/nodes/{NODE_NAME}", timeout=5).json()
            ready = any(c["type"] == "Ready" and c["status"] == "True"
                        for c in node.get("status", {}).get("conditions", []))
            account = session.get(f"{self.url}/api/v1/namespaces/default/serviceaccounts/default", timeout=5)
            if ready and account.ok:
                return
            time.sleep(0.1)
        logs = "\n".join(f"--- {c.name}\n{c.log_tail()}" for c in self.components)
        raise RuntimeError(f"the control plane was not usable after {timeout}s\n{logs}")

    def logs(self) -> str:
        return "\n".join(f"--- {c.name}\n{c.log_tail()}" for c in self.components)

    def stop(self) -> None:
        for component in reversed(self.components):
            component.stop()
        self.components.clear()
