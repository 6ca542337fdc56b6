"""The storage of a TableReplica pass: every location the operator itself reads or writes (checks of units on
both sides, housekeeping, plans, failover checks) is reached with the credentials of the ClusterStorage it is
on, as the policy allows that namespace (reconcile.access.cluster_access): its own Secret, or the operator's
identity only where the grant says so. A location on no cluster of the pass is refused, never reached with
whatever credentials the operator happens to hold.

A drop-in for copy.storage.Storage where the operator uses one (filesystem(location), s3, webhdfs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import HADOOP_USER_ENV, Location, S3Settings, Storage, WebHdfsSettings
from hivecat.kerberos.login import KerberosLogin
from hivecat.locations.prefix import LocationPrefix, holds, storage_prefix

if TYPE_CHECKING:
    from pyarrow import fs as pafs

    from hivecat.specs.kerberos import KerberosSpec

# Keys a ClusterStorage's credentials Secret may hold (its CRD documents them).
ACCESS_KEY, SECRET_KEY, SESSION_TOKEN = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"
SECRET_KEYS: Final = (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, HADOOP_USER_ENV)


@dataclass(frozen=True)
class ClusterAccess:
    """How hivecat may reach one cluster for one namespace (reconcile.access.cluster_access decides): with whose
    credentials."""

    cluster: str
    filesystem: str
    credentials_secret: str | None  # a Secret of the namespace; None: the operator's own identity (granted)
    audit: Any = None  # under Audit: the Violation the policy would refuse it for (reported, not enforced)
    kerberos: KerberosSpec | None = None  # a kerberized HDFS: the namespace's login, its keytab from its Secret


@dataclass(frozen=True)
class Credentials:
    """What a ClusterStorage's Secret holds for hivecat (never in a repr)."""

    values: Mapping[str, str]

    def __repr__(self) -> str:
        return f"Credentials(keys={sorted(self.values)})"


def cluster_storage(access: ClusterAccess, ambient: Storage, read_secret: Callable[[str], Credentials],
                    login: Callable[[KerberosSpec], KerberosLogin] | None = None) -> Storage:
    """The Storage that reaches `access`'s cluster: endpoints as the operator is configured (an administrator's
    setting), identity from the namespace's Secret or Kerberos login (`login`: its keytab, from its Secret, in a
    credential store of its own), or the operator's own where the grant allows it."""
    if access.kerberos is not None:
        if login is None:
            raise CopyInputError(f"ClusterStorage {access.cluster} is kerberized, and this pass has no way to log in")
        kerberos = access.kerberos
        webhdfs = WebHdfsSettings(ambient.webhdfs.endpoints, None, login(kerberos), ambient.webhdfs.ca_bundle,
                                  kerberos.http_principal)
        return Storage(_endpoints_only(ambient.s3), webhdfs)
    if access.credentials_secret is None:
        return ambient  # cluster_access allowed it: file:// (no identity), a grant with ambientCredentials, Audit
    found = read_secret(access.credentials_secret).values
    family = storage_prefix(access.filesystem).family
    s3, webhdfs = _endpoints_only(ambient.s3), WebHdfsSettings(ambient.webhdfs.endpoints, None)
    if family == "s3":
        if ACCESS_KEY not in found or SECRET_KEY not in found:
            raise CopyInputError(f"Secret {access.credentials_secret} of ClusterStorage {access.cluster} needs "
                                 f"{ACCESS_KEY} and {SECRET_KEY}")
        s3 = S3Settings(s3.endpoint, s3.region, found[ACCESS_KEY], found[SECRET_KEY], found.get(SESSION_TOKEN))
    if family == "hdfs":
        webhdfs = WebHdfsSettings(ambient.webhdfs.endpoints, found.get(HADOOP_USER_ENV) or ambient.webhdfs.user)
    return Storage(s3, webhdfs)


def _endpoints_only(settings: S3Settings) -> S3Settings:
    return S3Settings(settings.endpoint, settings.region)


class RoutedStorage:
    """Each location through the Storage of the cluster it is on (the most specific filesystem holding it)."""

    def __init__(self, routes: Sequence[tuple[str, Callable[[], Storage]]], ambient: Storage) -> None:
        """`routes`: each cluster's filesystem, and how to make its Storage, called when a location on that
        cluster is first reached (a pass that only looks at a copy Job reads no cluster's Secret)."""
        parsed = [(storage_prefix(filesystem), make) for filesystem, make in routes]
        self._routes: list[tuple[LocationPrefix, Callable[[], Storage]]] = sorted(
            parsed, key=lambda r: -len(str(r[0])))
        self._made: dict[LocationPrefix, Storage] = {}
        # Endpoints only: what copy workloads are told about where storage is (copy_launch), never keys.
        self.s3 = _endpoints_only(ambient.s3)
        self.webhdfs = WebHdfsSettings(ambient.webhdfs.endpoints, None, None, ambient.webhdfs.ca_bundle)

    def storage_for(self, location: Location) -> Storage:
        try:
            place = storage_prefix(location.uri)
        except ValueError:
            place = None
        for prefix, make in self._routes:
            if place is not None and holds(prefix, place):
                if prefix not in self._made:
                    self._made[prefix] = make()
                return self._made[prefix]
        raise CopyInputError(f"{location.uri} is on none of the clusters this TableReplica may use")

    def filesystem(self, location: Location) -> pafs.FileSystem:
        return self.storage_for(location).filesystem(location)

    def s3_client(self):
        raise CopyInputError("server-side copies run in copy workloads, never in the operator")
