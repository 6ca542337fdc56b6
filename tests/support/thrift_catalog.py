"""A Thrift-mode HiveCatalog served for real in the operator tier: its database initialised with the command
of the schema Job the operator would create, the HiveCatalog applied, and the metastore pod's own command run
by the test in the stand-in image (kwok runs no containers) — Hive Metastore 3.1.3 on MariaDB, reached at
127.0.0.1:PORT, where a CatalogPolicy of the administrator's says the operator finds it (the operator runs
outside the cluster's network). Also Spark configured from the catalog's client ConfigMap, as a user's job
would be.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from kube.clients import Client

from hivecat.local.net import free_port, wait_for_port
from hivecat.local.processes import stop_process_group
from hivecat.workloads.schema import Init
from hivecat.specs.hivecatalog import parse_hive_catalog
from hivecat.workloads.metastore import metastore_config_map
from hivecat.workloads.schema_job import schema_job
from support.hive_image import STANDIN_PORT_ENV, StandInImage
from support.hive_metastores import HIVE3
from support.kube_resources import apply, get, password_secret, wait_for
from support.policy import grant
from support.secure_catalog import KerberizedCatalog

SECRET = "metastore-db"


def catalog_manifest(name: str, db_url: str) -> dict:
    url = sa.make_url(db_url)
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog",
            "metadata": {"name": name},
            "spec": {"database": {"type": "mariadb", "host": url.host, "port": url.port or 3306,
                                  "name": url.database, "user": url.username, "passwordSecretRef": {"name": SECRET}},
                     "metastore": {"hiveVersion": HIVE3.version, "warehouseDir": "file:///tmp/unused-warehouse"}}}


@dataclass(frozen=True)
class ServedCatalog:
    name: str
    port: int            # the metastore's Thrift port on 127.0.0.1
    spark_conf: Path     # SPARK_CONF_DIR with the catalog's client files, pointed at host:port
    host: str = "127.0.0.1"  # how clients name the metastore's host (localhost when kerberized)

    def spark(self, script: str, *args: str, check: bool = True, extra_conf: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess:
        """Run a PySpark script (a separate process, as a user's job) with the catalog's client config."""
        env = {**os.environ, "SPARK_CONF_DIR": str(self.spark_conf), "SPARK_LOCAL_IP": "127.0.0.1",
               "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                              timeout=300, cwd=self.spark_conf)
        if check:
            assert done.returncode == 0, done.stderr[-4000:]
        return done


@contextmanager
def served_catalog(kubectl: Client, namespace: str, metastore_db: str, tmp_path: Path, name: str = "sales",
                   extra_spark_conf: dict[str, str] | None = None, *, kerberos: KerberizedCatalog | None = None,
                   hive_site: dict[str, str] | None = None) -> Iterator[ServedCatalog]:
    """Apply the HiveCatalog (an operator must be running) and serve its metastore until the block ends; a
    CatalogPolicy grants the namespace the metastore's address and its database's host (and, kerberized, the
    catalog's two logins). `hive_site`: the catalog's hive-site classification."""
    password = sa.make_url(metastore_db).password
    port = free_port()
    manifest = catalog_manifest(name, metastore_db)
    if hive_site:
        manifest["spec"]["configurations"] = [{"classification": "hive-site", "properties": hive_site}]
    host, options, secrets = "127.0.0.1", {}, []
    if kerberos is not None:  # clients name the metastore's host in its principal: localhost, never an address
        manifest["spec"]["kerberos"] = kerberos.spec
        host, secrets = "localhost", kerberos.secrets()
        options = {"mounts": kerberos.mounts, "krb5_conf": kerberos.kdc.krb5_conf.read_text()}
    grant(kubectl, namespace, f"{name}-metastore", metastoreAddresses=[{"catalog": name, "address": f"{host}:{port}"}],
          databases=[{"host": sa.make_url(metastore_db).host}],
          **({"kerberos": kerberos.grants} if kerberos else {}))
    with serving(kubectl, namespace, manifest, {(SECRET, "password"): password}, port, tmp_path,
                 lambda: apply(kubectl, namespace, password_secret(SECRET, password), *secrets, manifest),
                 extra_spark_conf, host=host, **options) as served:
        yield served


@contextmanager
def serving(kubectl: Client, namespace: str, manifest: dict, secrets: dict[tuple[str, str], str], port: int,
            tmp_path: Path, apply_catalog: Callable[[], None], extra_spark_conf: dict[str, str] | None = None,
            *, host: str = "127.0.0.1", mounts: Mapping[str, Path] = {}, krb5_conf: str | None = None
            ) -> Iterator[ServedCatalog]:
    """Serve the Thrift catalog `manifest` (which the policy says is reached at `host`:`port`): its database
    initialised with the schema Job's command, then `apply_catalog()` (however the test applies it), then the
    metastore Deployment's own command, with the ConfigMap the operator made, run until the block ends.
    `secrets`: (Secret, key) -> value, for the containers' secretKeyRefs; `mounts`: the pod's Secret volumes (mount
    path → a directory here); `krb5_conf`: the operator's, for the schema Job's ConfigMap of a kerberized catalog."""
    name = manifest["metadata"]["name"]
    spec = parse_hive_catalog({**manifest, "metadata": {**manifest["metadata"], "namespace": namespace}},
                              default_image="x")
    image = StandInImage(tmp_path / "image", HIVE3, "mysql")
    conf_dir = StandInImage.conf_dir(tmp_path / "job", metastore_config_map(spec, krb5_conf)["data"])
    init = schema_job(spec, Init("3.1.0"))["spec"]["template"]["spec"]["containers"][0]
    image.run(init, image.environment(init, secrets, conf_dir))
    apply_catalog()
    deployment = wait_for("the metastore Deployment", lambda: get(kubectl, namespace, "deployment",
                                                                  f"{name}-metastore"))
    server = deployment["spec"]["template"]["spec"]["containers"][0]
    made = kubectl.json("get", "-n", namespace, "configmap", f"{name}-metastore-config")["data"]
    conf_dir = StandInImage.conf_dir(tmp_path / "pod", made)
    metastore = image.start(server, image.environment(server, secrets, conf_dir, {STANDIN_PORT_ENV: str(port)},
                                                      mounts), tmp_path / "metastore.log")
    try:
        wait_for_port(port, timeout=120)
        files = kubectl.json("get", "-n", namespace, "configmap", f"{name}-client")["data"]
        endpoint = f"thrift://{name}-metastore.{namespace}.svc:9083"
        spark_conf = tmp_path / "spark-conf"
        spark_conf.mkdir()
        local = f"thrift://{host}:{port}"
        (spark_conf / "hive-site.xml").write_text(files["hive-site.xml"].replace(endpoint, local))
        (spark_conf / "spark-defaults.conf").write_text(
            files["spark-defaults.conf"].replace(endpoint, local)
            + "".join(f"{key} {value}\n" for key, value in (extra_spark_conf or {}).items()))
        yield ServedCatalog(name, port, spark_conf, host)
    finally:
        stop_process_group(metastore)
