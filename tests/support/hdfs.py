"""A real HDFS (namenode + one datanode) as a child process, from Hadoop's jars on Maven Central.

`scripts/fetch-maven.sh hadoop` puts hadoop-minicluster and hadoop-distcp (3.4.1) with their runtime
dependencies into ~/.cache/hivecat/maven/hadoop-<version>/ (seconds after the first time). `HdfsCluster`
runs `org.apache.hadoop.mapreduce.MiniHadoopClusterManager -nomr` (the `mapred minicluster` CLI) from there:
one JVM holding a MiniDFSCluster with a fixed data directory, so it can be stopped and started again over
the same namespace and blocks on another port (what a namenode move looks like to every stored location).

    cluster = HdfsCluster(tmp_path / "hdfs")
    cluster.start(format=True)          # a new namespace
    cluster.uri                         # hdfs://127.0.0.1:<rpc port>
    cluster.stop()
    cluster.start(rpc_port=other_port)  # same data, new authority (format defaults to False)

Both the namenode RPC and its HTTP (WebHDFS) server listen on 127.0.0.1. With `advertised` (the real test
node's bridge address, which forwards to loopback: tests/kube/node.py `expose`), the cluster is named by that
address instead (its URI, and the datanode's name in WebHDFS redirects), so pods reach it too. `start` returns when the manager
reports the cluster up (MiniDFSCluster.waitActive: the datanode registered and sent its block report),
WebHDFS answers GETFILESTATUS / and the namenode is out of safe mode.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from hivecat.jvm import JAVA_MODULE_OPTIONS
from hivecat.local.processes import stop_process_group
from hivecat.local.hadoop import FETCH_SCRIPT, hadoop_jars, java_executable, run_distcp  # noqa: F401  (names kept)
from hivecat.local.net import free_port, port_open
from support.java_build import compiled

if TYPE_CHECKING:
    from support.secure_hdfs import HdfsSecurity

REPO = Path(__file__).resolve().parents[2]
MAIN_CLASS = "org.apache.hadoop.mapreduce.MiniHadoopClusterManager"
NAMED_LAUNCHER = REPO / "tests" / "java" / "NamedMiniDfs.java"
# What MiniHadoopClusterManager logs once MiniDFSCluster.build() (which waits for the datanode) returned.
READY_LINE = "Started MiniDFSCluster -- namenode on port"
SAFE_MODE_LEFT = "STATE* Leaving safe mode"


class HdfsCluster:
    """One MiniDFSCluster process over a fixed data directory; restartable on other ports."""

    def __init__(self, workdir: Path, jars: Path | None = None, datanodes: int = 1,
                 security: HdfsSecurity | None = None, advertised: str = "127.0.0.1") -> None:
        self.workdir = Path(workdir)
        self.advertised = advertised
        self.jars = jars
        self.datanodes = datanodes
        self.security = security  # Kerberos, SASL data transfer and HTTPS (support.secure_hdfs)
        self.process: subprocess.Popen[bytes] | None = None
        self.rpc_port = 0
        self.http_port = 0
        self.starts = 0
        self.start_seconds: list[float] = []

    # --- addresses ------------------------------------------------------------------------------

    @property
    def authority(self) -> str:
        return f"{self.advertised}:{self.rpc_port}"

    @property
    def uri(self) -> str:
        """hdfs://127.0.0.1:PORT (or the advertised address), the prefix every location on this cluster starts with."""
        return f"hdfs://{self.authority}"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "dfs"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"hdfs-{self.starts}.log"

    # --- lifecycle ------------------------------------------------------------------------------

    def command(self, *, format: bool) -> list[str]:
        jars = self.jars or hadoop_jars()
        conf = {
            "hdfs.minidfs.basedir": str(self.data_dir),  # MiniDFSCluster's base dir: name-0-*, data/
            "dfs.webhdfs.enabled": "true",
            "dfs.namenode.rpc-bind-host": "127.0.0.1",
            "dfs.namenode.http-bind-host": "127.0.0.1",
            "dfs.permissions.enabled": "false",  # Spark writes as the local user; no superuser games
            "dfs.replication": "1",
            # WebHDFS redirects name the datanode by this; RPC clients use the address it registered from
            **({"dfs.datanode.hostname": self.advertised} if self.advertised != "127.0.0.1" else {}),
            **(self.security.conf(self.http_port) if self.security else {}),
        }
        classpath = f"{self.security.conf_dir}:{jars}/*" if self.security else f"{jars}/*"
        defines = [arg for key, value in conf.items() for arg in ("-D", f"{key}={value}")]
        jvm = [java_executable(), "-Xmx768m", *JAVA_MODULE_OPTIONS,
               *(self.security.jvm_options if self.security else []),
               f"-Djava.io.tmpdir={self.workdir / 'tmp'}", f"-Dtest.build.data={self.workdir / 'build'}"]
        if self.advertised != "127.0.0.1":  # a launcher that lets the datanode keep its configured name
            assert self.datanodes == 1 and not self.security
            classes = compiled(NAMED_LAUNCHER, [f"{jars}/*"])
            return [*jvm, "-cp", f"{classes}:{classpath}", NAMED_LAUNCHER.stem,
                    str(self.rpc_port), str(self.http_port), str(format).lower(), *defines]
        return [
            *jvm, "-cp", classpath, MAIN_CLASS,
            "-nomr", "-datanodes", str(self.datanodes),
            "-nnport", str(self.rpc_port), "-nnhttpport", str(self.http_port),
            *(["-format"] if format else []), *defines,
        ]

    def start(self, *, format: bool = False, rpc_port: int | None = None, http_port: int | None = None,
              timeout: float = 180.0) -> "HdfsCluster":
        """Start over the data directory; `format=True` wipes it first (needed the first time)."""
        if self.process is not None:
            raise RuntimeError("this HDFS cluster is already running")
        if not format and not (self.data_dir / "name-0-1").is_dir():
            raise RuntimeError(f"{self.data_dir} holds no namespace yet: start(format=True) first")
        self.rpc_port = rpc_port or free_port()
        self.http_port = http_port or free_port()
        for port in (self.rpc_port, self.http_port):
            if port_open(port):
                raise RuntimeError(f"127.0.0.1:{port} is already taken")
        (self.workdir / "tmp").mkdir(parents=True, exist_ok=True)
        self.starts += 1
        began = time.monotonic()
        command = self.command(format=format)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            self._wait_until_serving(began + timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds.append(round(time.monotonic() - began, 2))
        return self

    def _wait_until_serving(self, deadline: float) -> None:
        assert self.process is not None
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"HDFS exited with {self.process.returncode} before serving:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"HDFS did not come up on {self.authority}:\n{self.log_tail()}")
            if READY_LINE in self.log_path.read_text(errors="replace") and self._serving():
                return
            time.sleep(0.2)

    def _serving(self) -> bool:
        if self.security:  # every web page wants SPNEGO there: the namenode's own log says it left safe mode
            return SAFE_MODE_LEFT in self.log_path.read_text(errors="replace")
        try:
            root = self.webhdfs("GETFILESTATUS", "/")
            info = self.jmx("Hadoop:service=NameNode,name=NameNodeInfo")
        except (OSError, ValueError):
            return False
        return root.get("FileStatus", {}).get("type") == "DIRECTORY" and not info.get("Safemode")

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM (the manager's shutdown hook stops the cluster), SIGKILL after `grace` seconds."""
        process, self.process = self.process, None
        stop_process_group(process, grace)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text[-lines:])

    # --- clients over HTTP (no Hadoop client in Python needed) -----------------------------------

    @property
    def http_url(self) -> str:
        """The namenode's web address: https://localhost:PORT when secured (its certificate names localhost)."""
        return f"https://localhost:{self.http_port}" if self.security else f"http://127.0.0.1:{self.http_port}"

    def jmx(self, bean: str) -> dict:
        url = f"{self.http_url}/jmx?qry={bean}"
        context = self.security.ssl_context() if self.security else None
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            beans = json.load(response).get("beans", [])
        return beans[0] if beans else {}

    def datanode_ports(self) -> list[int]:
        """The datanodes' HTTP ports (WebHDFS OPEN and CREATE are redirected there) and data transfer ports
        (Hadoop clients read and write blocks there)."""
        live = json.loads(self.jmx("Hadoop:service=NameNode,name=NameNodeInfo").get("LiveNodes") or "{}")
        return sorted(int(node[key].rsplit(":", 1)[1]) for node in live.values() for key in ("infoAddr", "xferaddr"))

    def webhdfs(self, op: str, path: str, method: str = "GET", **params: str) -> dict:
        query = "&".join([f"op={op}", *(f"{k}={v}" for k, v in params.items())])
        request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}/webhdfs/v1{path}?{query}",
                                         method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else {}

    def list_status(self, path: str) -> list[dict]:
        return self.webhdfs("LISTSTATUS", path)["FileStatuses"]["FileStatus"]

    def read(self, path: str) -> bytes:
        """A file's bytes (OPEN redirects to the datanode; urllib follows)."""
        url = f"http://127.0.0.1:{self.http_port}/webhdfs/v1{path}?op=OPEN"
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.read()

    def exists(self, path: str) -> bool:
        try:
            self.webhdfs("GETFILESTATUS", path)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def __enter__(self) -> "HdfsCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def hadoop_jar_dir() -> Path:
    """The fetched Hadoop jars (fails with Maven's own error when they cannot be had)."""
    try:
        return hadoop_jars()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"could not fetch Hadoop from Maven Central: {exc}")


@pytest.fixture
def hdfs_cluster(hadoop_jar_dir: Path, tmp_path: Path) -> Iterator[HdfsCluster]:
    """A freshly formatted, running HDFS for one test; stopped (whatever state the test left) after."""
    cluster = HdfsCluster(tmp_path / "hdfs", jars=hadoop_jar_dir)
    try:
        cluster.start(format=True)
    except (RuntimeError, TimeoutError, FileNotFoundError) as exc:
        pytest.fail(f"HDFS could not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
