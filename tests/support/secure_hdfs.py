"""HDFS secured as production secures it without root: Kerberos, SASL on data transfer, HTTPS only.

What a kerberized cluster's hdfs-site.xml holds, for one MiniDFSCluster (support.hdfs.HdfsCluster):

- `hadoop.security.authentication=kerberos`; the namenode and the datanode log in as hdfs/localhost, and
  their web servers (WebHDFS) accept SPNEGO for HTTP/localhost, both from one keytab made on the session's KDC;
- block access tokens, and `dfs.data.transfer.protection` (SASL) in place of privileged ports: a datanode
  started by a non-root user refuses to run secured otherwise;
- `dfs.http.policy=HTTPS_ONLY`, which that SASL mode requires: the namenode's and the datanode's web servers
  speak TLS only, with a certificate for localhost/127.0.0.1 made by keytool (JDK) and signed by itself, so
  clients verify it against that certificate as their CA bundle (`ca_bundle`, PEM).

hadoop.security.auth_to_local keeps Hadoop's DEFAULT rule: a principal of the default realm maps to its
first component (alice@HIVECAT.TEST owns files as alice), so what a client wrote shows who it was.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hivecat.catalog.hive_site import hive_site_xml
from hivecat.jvm import JAVA_MODULE_OPTIONS
from hivecat.local.hadoop import hadoop_jars, java_executable
from support.hdfs import HdfsCluster
from support.kdc import Kdc

HOST = "localhost"  # the name in the service principals and the certificate; clients dial it


@dataclass
class HdfsSecurity:
    kdc: Kdc
    workdir: Path
    protection: str = "authentication"  # dfs.data.transfer.protection: authentication | integrity | privacy
    password: str = field(default_factory=lambda: uuid.uuid4().hex)  # the keystores' (never leaves workdir)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.service = self.kdc.principal(f"hdfs/{HOST}")
        self.http = self.kdc.principal(f"HTTP/{HOST}")
        self.keytab = self.kdc.keytab([self.service, self.http], self.workdir / "hdfs.keytab")
        self._certificate()

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"  # ssl-server.xml / ssl-client.xml: Hadoop finds them on the class path

    @property
    def ca_bundle(self) -> Path:
        return self.workdir / "ca.pem"

    @property
    def jvm_options(self) -> list[str]:
        return self.kdc.jvm_options

    def _certificate(self) -> None:
        keytool = str(Path(java_executable()).with_name("keytool"))
        store = self.workdir / "server.jks"
        common = ["-storepass", self.password, "-keystore", str(store), "-storetype", "JKS"]
        subprocess.run([keytool, "-genkeypair", "-alias", "hdfs", "-keyalg", "RSA", "-keysize", "2048",
                        "-validity", "30", "-dname", f"CN={HOST}", "-ext", f"SAN=dns:{HOST},ip:127.0.0.1",
                        "-keypass", self.password, *common], check=True, capture_output=True, timeout=120)
        pem = subprocess.run([keytool, "-exportcert", "-rfc", "-alias", "hdfs", *common],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        self.ca_bundle.write_text(pem)
        self.conf_dir.mkdir(exist_ok=True)
        (self.conf_dir / "ssl-server.xml").write_text(hive_site_xml({
            "ssl.server.keystore.location": str(store), "ssl.server.keystore.password": self.password,
            "ssl.server.keystore.keypassword": self.password, "ssl.server.keystore.type": "jks",
            "ssl.server.truststore.location": str(store), "ssl.server.truststore.password": self.password,
            "ssl.server.truststore.type": "jks"}))
        (self.conf_dir / "ssl-client.xml").write_text(hive_site_xml({
            "ssl.client.truststore.location": str(store), "ssl.client.truststore.password": self.password,
            "ssl.client.truststore.type": "jks"}))

    def conf(self, https_port: int) -> dict[str, str]:
        keytab = str(self.keytab)
        return {
            "hadoop.security.authentication": "kerberos",
            "dfs.namenode.kerberos.principal": self.service, "dfs.namenode.keytab.file": keytab,
            "dfs.datanode.kerberos.principal": self.service, "dfs.datanode.keytab.file": keytab,
            "dfs.web.authentication.kerberos.principal": self.http, "dfs.web.authentication.kerberos.keytab": keytab,
            # Hadoop 3.2+ authenticates WebHDFS through the web servers' filter: SPNEGO, no anonymous access
            "hadoop.http.authentication.type": "kerberos",
            "hadoop.http.authentication.kerberos.principal": self.http,
            "hadoop.http.authentication.kerberos.keytab": keytab,
            "hadoop.http.authentication.simple.anonymous.allowed": "false",
            "dfs.block.access.token.enable": "true",
            "dfs.data.transfer.protection": self.protection,
            "dfs.http.policy": "HTTPS_ONLY",
            "dfs.namenode.https-address": f"127.0.0.1:{https_port}",
            "dfs.namenode.https-bind-host": "127.0.0.1",
            "dfs.datanode.https.address": "127.0.0.1:0",
            # a kerberized metastore acts on HDFS as its caller (Hive's doAs), as production namenodes allow it
            "hadoop.proxyuser.hive.hosts": "*", "hadoop.proxyuser.hive.groups": "*",
        }

    def spark_conf(self, principal: str, keytab: Path) -> dict[str, str]:
        """spark-defaults of a Spark job on this cluster as `principal`: Spark's own login (spark.kerberos.*)."""
        return {"spark.hadoop.hadoop.security.authentication": "kerberos",
                "spark.hadoop.dfs.namenode.kerberos.principal": self.service,
                "spark.hadoop.dfs.data.transfer.protection": self.protection,
                "spark.kerberos.principal": principal, "spark.kerberos.keytab": str(keytab),
                "spark.driver.extraJavaOptions": " ".join(self.kdc.jvm_options)}

    @staticmethod
    def core_site(spark_conf: dict[str, str]) -> str:
        """The core-site.xml an edge node has beside spark-defaults: Spark's Hadoop client logs in (spark.kerberos.*)
        only where Hadoop's configuration on its class path says the cluster is kerberized."""
        return hive_site_xml({key.removeprefix("spark.hadoop."): value for key, value in spark_conf.items()
                              if key.startswith("spark.hadoop.")})

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_bundle))


def fs_shell(cluster: HdfsCluster, ccache: str, *args: str, timeout: float = 120) -> str:
    """`hdfs dfs ARGS` (Hadoop's FsShell, from the cluster's jars) as the ticket in `ccache`: Hadoop's own client,
    over RPC and SASL data transfer, to read back what hivecat wrote through WebHDFS."""
    security = cluster.security
    assert security is not None
    conf = {"fs.defaultFS": cluster.uri, "hadoop.security.authentication": "kerberos",
            "dfs.namenode.kerberos.principal": security.service,
            "dfs.data.transfer.protection": security.protection, "dfs.block.access.token.enable": "true"}
    client = security.workdir / f"client-{cluster.rpc_port}"  # a client's own core-site.xml, as on an edge node
    client.mkdir(exist_ok=True)
    (client / "core-site.xml").write_text(hive_site_xml(conf))
    (client / "ssl-client.xml").write_text((security.conf_dir / "ssl-client.xml").read_text())
    command = [java_executable(), "-Xmx256m", *JAVA_MODULE_OPTIONS, *security.jvm_options,
               "-cp", f"{client}:{cluster.jars or hadoop_jars()}/*", "org.apache.hadoop.fs.FsShell", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "KRB5CCNAME": ccache})
    if done.returncode != 0:
        raise RuntimeError(f"hdfs dfs {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture
def kerberized_hdfs(kdc: Kdc, hadoop_jar_dir: Path, tmp_path: Path) -> Iterator[HdfsCluster]:
    """A kerberized MiniDFSCluster of the test's own (`.security`: its HdfsSecurity), stopped after the test."""
    cluster = HdfsCluster(tmp_path / "hdfs", jars=hadoop_jar_dir, security=HdfsSecurity(kdc, tmp_path / "security"))
    cluster.start(format=True)
    try:
        yield cluster
    finally:
        cluster.stop()
