"""The live ports of a TableReplica pass (act/tablereplica.py's ReplicaPorts): its catalogs, the launcher
of each secondary's copies, and the storage of each cluster the pass may use, reached with that cluster's own
credentials as `cluster_access` allowed (replication/routes.py)."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import kopf

from hivecat import k8s
from hivecat.catalog.base import Catalog
from hivecat.config import config
from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import S3Settings, Storage
from hivecat.handlers import pools
from hivecat.handlers.copy_launch import JOB, SPARK_APPLICATION, workload_launcher
from hivecat.handlers.ports import namespace_login, open_backend
from hivecat.kerberos.login import KerberosLogin
from hivecat.locations.prefix import storage_prefix
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.policy import Violation
from hivecat.replication.launch import Launcher, LocalLauncher, local_environment
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.routes import SECRET_KEYS, ClusterAccess, Credentials, RoutedStorage, cluster_storage
from hivecat.specs.kerberos import KerberosSpec


class LiveReplicaPorts:
    def __init__(self, body: kopf.Body, catalog: str, access: dict[str, ClusterAccess | Violation],
                 copying: Mapping[str, str] | None = None) -> None:
        """`copying`: per secondary, the copy run the last pass left in flight (None: as status says, after a
        restart; status may lag behind the pass that wrote it)."""
        self.body, self.catalog, self.namespace, self.copying = body, catalog, body.meta.namespace, copying
        self.access = {name: a for name, a in access.items() if isinstance(a, ClusterAccess)}
        self._storage: RoutedStorage | None = None
        self._routes: dict[str, Storage] = {}

    def open(self, backend: Backend) -> Catalog:
        return open_backend(self.namespace, backend)

    def launcher(self, secondary: ClusterEntry) -> Launcher:
        kind = (secondary.compute or {}).get("type", "Local")
        if kind == "Local":  # a child process of the operator: only the environment this copy needs
            family = storage_prefix(secondary.filesystem).family
            return LocalLauncher(config().state_dir / "copies", pools.local_runs(),
                                 (self.namespace, self.body.meta.name, secondary.name),
                                 local_environment(self._route(secondary.name), family))
        workload = SPARK_APPLICATION if kind == "SparkApplication" else JOB
        expected = self.copying.get(secondary.name) if self.copying is not None else _copy_run_in_status(
            self.body, secondary.name)
        return workload_launcher(workload, self.body, self.catalog, secondary, self.storage(), expected)

    def storage(self) -> RoutedStorage:
        """Each cluster this TableReplica may use, with its own credentials: read when the pass first reaches a
        location on that cluster, at most once per pass."""
        if self._storage is None:
            self._storage = RoutedStorage([(access.filesystem, functools.partial(self._cluster, name))
                                           for name, access in self.access.items()], self._ambient)
        return self._storage

    def _route(self, cluster: str) -> Storage | None:
        return self._cluster(cluster) if cluster in self.access else None

    def _cluster(self, name: str) -> Storage:
        if name not in self._routes:
            self._routes[name] = cluster_storage(self.access[name], self._ambient, self._credentials, self._login)
        return self._routes[name]

    @functools.cached_property
    def _ambient(self) -> Storage:
        return _ambient_storage()

    def _credentials(self, secret: str) -> Credentials:
        return Credentials(k8s.read_secret_keys(self.namespace, secret, SECRET_KEYS))

    def _login(self, kerberos: KerberosSpec) -> KerberosLogin:
        return namespace_login(self.namespace, kerberos)


def _copy_run_in_status(body: kopf.Body, cluster: str) -> str | None:
    for entry in (body.get("status") or {}).get("replicas") or ():
        if entry.get("cluster") == cluster:
            return entry.get("copyRunId")
    return None


def _ambient_storage() -> Storage:
    """The operator's own identity and endpoints (used only where cluster_access allowed it)."""
    try:
        return Storage(S3Settings.from_environment())
    except CopyInputError:  # no usable S3 settings here: file:// and hdfs:// still work
        return Storage()
