"""A real node beside kwok's: containerd (Debian's, with runc and the CNI plugins) and a kubelet, kube-proxy and
CoreDNS built from Go modules (scripts/build-control-plane.sh node). Its pods run for real: images come from
podman's store on this machine (scripts/build-image.sh), loaded into containerd, never pulled.

The pod network is one Linux bridge, `hivecat0` at 10.244.0.1/24 (CNI bridge + host-local). The host is
reachable from every pod at that address, so whatever pods call on the host listens there: the API server
(`ControlPlane(address=BRIDGE_ADDRESS)`, behind the `kubernetes` Service), CoreDNS (behind `kube-dns`,
10.96.0.10), and the tests' own services. kube-proxy (iptables) routes ClusterIPs.

Needs root (network namespaces, the bridge, iptables, mounts): this machine's tests run as root; elsewhere the
fixture says so and stops. One real node per machine at a time (one bridge name, one pod range).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests
import yaml

from kube.controlplane import REPO, Component, ControlPlane, free_port
from kube.images import build_image, podman
from kube.kubeconfig import write_kubeconfig

BUILD_SCRIPT = REPO / "scripts" / "build-control-plane.sh"
CNI_BIN = Path("/usr/lib/cni")
RUNC = Path("/usr/sbin/runc")
# containerd's content and snapshots, kept between runs so an unchanged image is not copied again (its state
# directory, with the running containers' files, is the run's own)
CONTAINERD_ROOT = Path(os.environ.get("HIVECAT_CACHE") or Path.home() / ".cache" / "hivecat") / "node" / "containerd"

NODE_NAME = "real-node-0"
BRIDGE = "hivecat0"
BRIDGE_ADDRESS = "10.244.0.1"
POD_SUBNET = "10.244.0.0/24"
DNS_SERVICE_IP = "10.96.0.10"
# Pods that must run for real select this label; the kwok node lacks it.
NODE_SELECTOR = {"hivecat.io/node": "real"}
# The nat chains `expose` fills, and the chains the kubelet makes (it never removes them; kube-proxy --cleanup
# removes kube-proxy's own).
HOST_CHAINS = {"PREROUTING": "HIVECAT-HOST-PRE", "OUTPUT": "HIVECAT-HOST-OUT", "INPUT": "HIVECAT-HOST-IN",
               "POSTROUTING": "HIVECAT-HOST-POST"}
KUBELET_CHAINS = ("KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT")
# Host-wide settings kube-proxy turns on (localhost node ports), put back when the node stops.
KUBE_PROXY_SYSCTLS = ("/proc/sys/net/ipv4/conf/all/route_localnet",)


def node_bin() -> Path:
    """kubelet, kube-proxy and coredns; built once (a minute with Go's caches warm), then checked in ms."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT), "node"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT.name} node failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done


def create_bridge() -> None:
    """The pod network's bridge, up with the host's address on it, before anything binds that address.
    A bridge left by an interrupted run is removed first (its pods are gone with their runtime)."""
    if os.geteuid() != 0:
        raise RuntimeError("a real node needs root (network namespaces, a bridge, iptables, mounts)")
    delete_bridge()
    _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "addr", "add", f"{BRIDGE_ADDRESS}/24", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
    # Pods reach other hosts through the host (the CNI plugin masquerades); a stock VM may have it off.
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1")


def _remove_chains(tool: str, tables: tuple[str, ...], chains: tuple[str, ...]) -> None:
    """The rules that jump to these chains, then the chains themselves, in each table that has them."""
    for table in tables:
        rules = _run(tool, "-t", table, "-S", check=False).stdout.splitlines()
        for rule in rules:
            words = rule.split()
            if words[:1] == ["-A"] and words[1] not in chains and words[-2:-1] == ["-j"] and words[-1] in chains:
                _run(tool, "-t", table, "-D", *words[1:], check=False)
        for chain in chains:
            if f"-N {chain}" in rules:
                _run(tool, "-t", table, "-F", chain, check=False)
                _run(tool, "-t", table, "-X", chain, check=False)


def delete_bridge() -> None:
    if _run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        _run("ip", "link", "delete", BRIDGE)


@dataclass
class RealNode:
    """`with RealNode(control_plane, images=(...)) as node:` — the node is Ready, its DNS and Services work,
    and every image in `images` (podman references) is in containerd as the same reference."""
    control_plane: ControlPlane
    images: tuple[str, ...] = ()
    workdir: Path = field(default_factory=lambda: Path("/tmp") / f"hivecat-node-{os.getpid()}")
    components: list[Component] = field(default_factory=list)
    start_seconds: float = 0.0
    _netns_before: set[str] = field(default_factory=set)
    _exposed: list[int] = field(default_factory=list)
    _sysctls: dict[str, str] = field(default_factory=dict)  # host settings kube-proxy changes, as they were

    @property
    def socket(self) -> Path:
        return self.workdir / "containerd.sock"

    def __enter__(self) -> RealNode:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _component(self, name: str, *argv: str) -> Component:
        component = Component(name, list(argv), self.workdir / f"{name}.log")
        self.components.append(component)
        component.start()
        return component

    def start(self) -> None:
        began = time.monotonic()
        binaries = node_bin()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._netns_before = set(os.listdir("/var/run/netns")) if os.path.isdir("/var/run/netns") else set()
        self._sysctls = {path: Path(path).read_text() for path in KUBE_PROXY_SYSCTLS}
        pause = build_image("pause")
        self._start_containerd(pause)
        self._load_images((pause, *self.images))
        self._start_kubelet(binaries / "kubelet")
        self._start_kube_proxy(binaries / "kube-proxy")
        self._start_dns(binaries / "coredns")
        self.start_seconds = time.monotonic() - began

    # --- the host's loopback services, for pods -------------------------------------------------------------
    def expose(self, port: int) -> str:
        """A service listening on the host's 127.0.0.1:PORT, reachable from pods (and from the host) at
        BRIDGE_ADDRESS:PORT: DNAT to loopback (route_localnet lets a packet from the bridge go there), and
        the source rewritten to 127.0.0.1 so the service sees a local client (MariaDB's grants name
        localhost). Returns "BRIDGE_ADDRESS:PORT"."""
        if not self._exposed:
            Path(f"/proc/sys/net/ipv4/conf/{BRIDGE}/route_localnet").write_text("1")
            for hook, chain in HOST_CHAINS.items():
                _run("iptables", "-t", "nat", "-N", chain)
                _run("iptables", "-t", "nat", "-A", hook, "-j", chain)
        dport = ("-p", "tcp", "--dport", str(port))
        loopback = f"127.0.0.1:{port}"
        for chain, rule in (
                (HOST_CHAINS["PREROUTING"], ("-i", BRIDGE, "-d", BRIDGE_ADDRESS, *dport, "-j", "DNAT",
                                             "--to-destination", loopback)),
                (HOST_CHAINS["OUTPUT"], ("-d", BRIDGE_ADDRESS, *dport, "-j", "DNAT", "--to-destination", loopback)),
                (HOST_CHAINS["INPUT"], ("-s", POD_SUBNET, "-d", "127.0.0.1", *dport, "-j", "SNAT",
                                        "--to-source", "127.0.0.1")),
                (HOST_CHAINS["POSTROUTING"], ("-o", "lo", "-s", BRIDGE_ADDRESS, "-d", "127.0.0.1", *dport,
                                              "-j", "SNAT", "--to-source", "127.0.0.1"))):
            _run("iptables", "-t", "nat", "-A", chain, *rule)
        self._exposed.append(port)
        return f"{BRIDGE_ADDRESS}:{port}"

    # --- containerd --------------------------------------------------------------------------------------
    def _start_containerd(self, pause: str) -> None:
        d = self.workdir
        (d / "cni").mkdir(exist_ok=True)
        (d / "cni" / "10-hivecat.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "hivecat", "plugins": [
                {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": True, "hairpinMode": True,
                 "ipam": {"type": "host-local", "dataDir": str(d / "ipam"),
                          "ranges": [[{"subnet": POD_SUBNET, "gateway": BRIDGE_ADDRESS}]],
                          "routes": [{"dst": "0.0.0.0/0"}]}},
                {"type": "portmap", "capabilities": {"portMappings": True}}]}))
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        (d / "containerd.toml").write_text(f"""version = 2
root = "{CONTAINERD_ROOT}"
state = "{d / 'state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[{cri}]
  sandbox_image = "{pause}"
  # root lacks CAP_SYS_RESOURCE here: the sandbox's default oom_score_adj (-998) would make runc fail
  restrict_oom_score_adj = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        BinaryName = "{RUNC}"
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{d / 'cni'}"
""")
        containerd = self._component("containerd", "containerd", f"--config={d / 'containerd.toml'}")
        deadline = time.monotonic() + 30
        while self._ctr("version", check=False).returncode != 0:
            containerd.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"containerd did not answer on {self.socket}:\n{containerd.log_tail()}")
            time.sleep(0.2)

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run("ctr", f"--address={self.socket}", "--namespace=k8s.io", *args, check=check)

    def _load_images(self, images: tuple[str, ...]) -> None:
        """podman's images into containerd under the same references (the kubelet finds them, pulls nothing).
        containerd's store outlives the run, so an image is copied once; images no longer asked for go."""
        listed = [line.split()[:3] for line in self._ctr("images", "ls").stdout.splitlines()[1:]]
        present = {ref for ref, _, _ in listed}
        for image in images:
            if image in present:
                continue
            archive = self.workdir / "image.tar"
            podman("save", "--format=docker-archive", "-o", str(archive), image)
            try:
                self._ctr("images", "import", str(archive))
            finally:
                archive.unlink(missing_ok=True)
        # every reference (the name, and the image ID the CRI adds) to a manifest no wanted image has
        kept = {digest for ref, _, digest in listed if ref in images}
        stale = {digest for ref, _, digest in listed if ref.startswith("localhost/hivecat")} - kept
        refs = [ref for ref, _, digest in listed if digest in stale]
        if refs:
            self._ctr("images", "remove", *refs, check=False)

    # --- kubelet, kube-proxy, DNS --------------------------------------------------------------------------
    def _identity(self, name: str, user: str, group: str | None = None) -> Path:
        pki = self.control_plane.pki
        assert pki is not None
        cert, key = pki.client(name, user, group)
        return write_kubeconfig(self.workdir / f"{name}.kubeconfig", self.control_plane.url, pki.ca_cert,
                                {"client-certificate": str(cert), "client-key": str(key)})

    def _start_kubelet(self, binary: Path) -> None:
        pki = self.control_plane.pki
        assert pki is not None
        # The node authorizer (and the system:node role through it) grants the kubelet what its node needs.
        kubeconfig = self._identity("kubelet", f"system:node:{NODE_NAME}", "system:nodes")
        config = self.workdir / "kubelet.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "failCgroupV1": False,  # the machines here have cgroup v1 (hybrid), which 1.35 refuses by default
            "cgroupDriver": "cgroupfs",  # no systemd
            "cgroupsPerQOS": False, "enforceNodeAllocatable": [],
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": str(pki.ca_cert)}},
            "authorization": {"mode": "Webhook"},
            "address": BRIDGE_ADDRESS, "port": free_port(), "readOnlyPort": 0, "healthzPort": free_port(),
            "clusterDNS": [DNS_SERVICE_IP], "clusterDomain": "cluster.local", "resolvConf": "/etc/resolv.conf",
            "failSwapOn": False, "localStorageCapacityIsolation": False,
            # a test machine's disk and memory are what they are: nothing is evicted or collected mid-test
            "evictionHard": {"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
        }))
        labels = ",".join(f"{key}={value}" for key, value in NODE_SELECTOR.items())
        kubelet = self._component(
            "kubelet", str(binary), f"--config={config}", f"--kubeconfig={kubeconfig}",
            f"--root-dir={self.workdir / 'kubelet'}", f"--cert-dir={self.workdir / 'kubelet-pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={BRIDGE_ADDRESS}", f"--node-labels={labels}", "--v=1")
        session = self.control_plane.admin_session()
        deadline = time.monotonic() + 60
        while True:
            kubelet.check_alive()
            node = session.get(f"{self.control_plane.url}/api/v1/nodes/{NODE_NAME}", timeout=5)
            conditions = node.json().get("status", {}).get("conditions", []) if node.ok else []
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{NODE_NAME} was not Ready after 60 s: {conditions}\n{kubelet.log_tail()}")
            time.sleep(0.2)

    def _start_kube_proxy(self, binary: Path) -> None:
        kubeconfig = self._identity("kube-proxy", "system:kube-proxy")  # bound to system:node-proxier by default
        config = self.workdir / "kube-proxy.yaml"
        health = free_port()
        config.write_text(yaml.safe_dump({
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "mode": "iptables", "clusterCIDR": POD_SUBNET, "hostnameOverride": NODE_NAME,
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            # leave the host's conntrack settings alone (setting them needs what root lacks in a VM)
            "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            "healthzBindAddress": f"127.0.0.1:{health}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
            "nodePortAddresses": ["primary"],
        }))
        proxy = self._component("kube-proxy", str(binary), f"--config={config}", "--v=1")
        self._wait_http(f"http://127.0.0.1:{health}/healthz", proxy)

    def _start_dns(self, binary: Path) -> None:
        """CoreDNS on the host at the bridge's address, serving cluster.local from the API; `kube-dns`
        (10.96.0.10, the kubelet's clusterDNS) is a Service without a selector whose endpoint is that address."""
        corefile = self.workdir / "Corefile"
        health = free_port()
        corefile.write_text(f""".:53 {{
    bind {BRIDGE_ADDRESS}
    errors
    health 127.0.0.1:{health}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {self.control_plane.admin_kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    forward . /etc/resolv.conf
    cache 5
}}
""")
        dns = self._component("coredns", str(binary), "-conf", str(corefile))
        self._wait_http(f"http://127.0.0.1:{health}/health", dns)
        session, url = self.control_plane.admin_session(), self.control_plane.url
        ports = [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]
        for path, body in (
                ("/api/v1/namespaces/kube-system/services", {
                    "metadata": {"name": "kube-dns"},
                    "spec": {"clusterIP": DNS_SERVICE_IP, "ports": [{**p, "targetPort": 53} for p in ports]}}),
                ("/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices", {
                    "metadata": {"name": "kube-dns-host", "labels": {"kubernetes.io/service-name": "kube-dns"}},
                    "addressType": "IPv4", "endpoints": [{"addresses": [BRIDGE_ADDRESS]}], "ports": ports})):
            response = session.post(f"{url}{path}", json=body, timeout=10)
            if response.status_code not in (201, 409):
                raise RuntimeError(f"creating {body['metadata']['name']}: {response.status_code} {response.text}")
        # A pod started before kube-proxy programs the Service would find no DNS: wait for its rules.
        deadline = time.monotonic() + 30
        while f"-d {DNS_SERVICE_IP}/32" not in _run("iptables", "-t", "nat", "-S", "KUBE-SERVICES", check=False).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError(f"kube-proxy did not route kube-dns within 30 s:\n{self.logs()}")
            time.sleep(0.2)

    @staticmethod
    def _wait_http(url: str, component: Component, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            component.check_alive()
            try:
                if requests.get(url, timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{component.name} not healthy at {url} after {timeout} s:\n{component.log_tail()}")
            time.sleep(0.2)

    def logs(self) -> str:
        return "\n".join(f"--- {c.name}\n{c.log_tail()}" for c in self.components)

    # --- teardown -----------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Everything the node made goes: pods (through the kubelet, so CNI releases them), containers,
        processes, mounts, network namespaces, iptables rules, the work directory."""
        if not self.components:
            return
        by_name = {c.name: c for c in self.components}
        if "kubelet" in by_name:
            self._drain()
        for name in ("coredns", "kube-proxy", "kubelet"):
            if name in by_name:
                by_name[name].stop()
        if "containerd" in by_name:
            self._remove_containers()
            by_name["containerd"].stop()
        subprocess.run(["pkill", "-9", "-f", f"containerd-shim.*-address {self.socket}"], check=False)
        if "kube-proxy" in by_name:
            binary = Path(by_name["kube-proxy"].argv[0])
            subprocess.run([str(binary), "--cleanup"], capture_output=True, check=False)
        _remove_chains("iptables", ("nat",), tuple(HOST_CHAINS.values()))
        for tool in ("iptables", "ip6tables"):
            _remove_chains(tool, ("filter", "mangle", "nat"), KUBELET_CHAINS)
        for path, value in self._sysctls.items():
            Path(path).write_text(value)
        self._exposed.clear()
        self.components.clear()
        self._unmount()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _drain(self) -> None:
        """Every pod on the node deleted (after marking it unschedulable) and gone, within 60 s."""
        session, url = self.control_plane.admin_session(), self.control_plane.url
        try:
            session.patch(f"{url}/api/v1/nodes/{NODE_NAME}", json={"spec": {"unschedulable": True}},
                          headers={"Content-Type": "application/merge-patch+json"}, timeout=10)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pods = session.get(f"{url}/api/v1/pods", params={"fieldSelector": f"spec.nodeName={NODE_NAME}"},
                                   timeout=10).json()["items"]
                if not pods:
                    return
                for pod in pods:
                    meta = pod["metadata"]
                    if not meta.get("deletionTimestamp"):
                        session.delete(f"{url}/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                                       json={"gracePeriodSeconds": 2}, timeout=10)
                time.sleep(0.5)
        except Exception:  # noqa: BLE001 - the control plane may be gone already: the runtime cleanup follows
            pass

    def _remove_containers(self) -> None:
        tasks = self._ctr("tasks", "ls", "-q", check=False).stdout.split()
        for task in tasks:
            self._ctr("tasks", "kill", "--signal=SIGKILL", task, check=False)
        for task in tasks:
            self._ctr("tasks", "delete", "--force", task, check=False)
        containers = self._ctr("containers", "ls", "-q", check=False).stdout.split()
        if containers:
            self._ctr("containers", "delete", *containers, check=False)

    def _unmount(self) -> None:
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        ours = [m for m in mounts if m.startswith(f"{self.workdir}/")]
        netns = set(os.listdir("/var/run/netns")) if os.path.isdir("/var/run/netns") else set()
        ours += [f"/var/run/netns/{name}" for name in netns - self._netns_before if name.startswith("cni-")]
        for target in sorted(set(ours), key=len, reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)
        for name in netns - self._netns_before:
            if name.startswith("cni-"):
                Path(f"/var/run/netns/{name}").unlink(missing_ok=True)
