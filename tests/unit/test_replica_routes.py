"""The storage of a TableReplica pass (replication/routes.py) and a Local copy's environment (replication/launch.py):
each cluster is reached with its own credentials, a location on no cluster of the pass is refused, and a Local
copy gets no more of the operator's environment than it needs. Before, operator-side checks, housekeeping and
plans used the operator's own S3 credentials on any bucket, and a Local copy inherited the whole environment
(the journal URL with its password included)."""

from __future__ import annotations

import pytest

from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import Location, S3Settings, Storage, WebHdfsSettings, parse_uri
from hivecat.replication.launch import local_environment
from hivecat.replication.routes import ClusterAccess, Credentials, RoutedStorage, cluster_storage

AMBIENT = Storage(S3Settings("http://s3.example", "eu-west-1", "OPERATOR-KEY", "operator-secret"),
                  WebHdfsSettings((("nn:8020", "http://nn:9870"),), "hive"))


def access(cluster: str, filesystem: str, secret: str | None) -> ClusterAccess:
    return ClusterAccess(cluster, filesystem, secret)


def secrets(name: str) -> Credentials:
    return Credentials({"team-keys": {"AWS_ACCESS_KEY_ID": "TEAM-KEY", "AWS_SECRET_ACCESS_KEY": "team-secret"},
                        "hdfs-user": {"HADOOP_USER_NAME": "team-a"}}[name])


def test_a_cluster_with_a_secret_is_reached_with_the_teams_keys_never_the_operators() -> None:
    storage = cluster_storage(access("dr", "s3://team-a-dr/wh", "team-keys"), AMBIENT, secrets)
    assert (storage.s3.access_key, storage.s3.secret_key) == ("TEAM-KEY", "team-secret")
    assert (storage.s3.endpoint, storage.s3.region) == ("http://s3.example", "eu-west-1")  # the administrator's
    hdfs = cluster_storage(access("main", "hdfs://nn:8020/team-a", "hdfs-user"), AMBIENT, secrets)
    assert hdfs.webhdfs.user == "team-a" and hdfs.s3.access_key is None
    assert "team-secret" not in repr(secrets("team-keys")) + repr(storage)


def test_a_secret_without_the_keys_is_refused() -> None:
    with pytest.raises(CopyInputError, match="needs AWS_ACCESS_KEY_ID"):
        cluster_storage(access("dr", "s3://team-a-dr/wh", "hdfs-user"), AMBIENT, secrets)


def test_ambient_only_where_cluster_access_allowed_it() -> None:
    assert cluster_storage(access("dev", "file:///data/team-a", None), AMBIENT, secrets) is AMBIENT


def test_each_location_through_its_clusters_storage_and_none_elsewhere() -> None:
    dr = cluster_storage(access("dr", "s3://team-a-dr/wh", "team-keys"), AMBIENT, secrets)
    routed = RoutedStorage([("s3://team-a-dr/wh", lambda: dr), ("file:///data/team-a", lambda: AMBIENT)], AMBIENT)
    assert routed.storage_for(parse_uri("s3a://team-a-dr/wh/t/dt=1")) is dr
    assert routed.storage_for(parse_uri("file:///data/team-a/x")) is AMBIENT
    for elsewhere in ("s3://team-b-dr/wh/t", "s3://team-a-dr/wh2/t", "file:///var/run/secrets/x"):
        with pytest.raises(CopyInputError, match="none of the clusters"):
            routed.filesystem(parse_uri(elsewhere))
    assert routed.s3.access_key is None and routed.webhdfs.user is None  # what copy Jobs are told: endpoints only
    with pytest.raises(CopyInputError):
        routed.s3_client()
    assert isinstance(parse_uri("file:///data/team-a/x"), Location)


def test_a_clusters_secret_is_read_when_a_location_on_it_is_first_reached_and_once() -> None:
    read: list[str] = []

    def counted(name: str) -> Credentials:
        read.append(name)
        return secrets(name)
    dr, main = access("dr", "s3://team-a-dr/wh", "team-keys"), access("main", "hdfs://nn:8020/team-a", "hdfs-user")
    routed = RoutedStorage([(dr.filesystem, lambda: cluster_storage(dr, AMBIENT, counted)),
                            (main.filesystem, lambda: cluster_storage(main, AMBIENT, counted))], AMBIENT)
    assert read == []  # made, nothing reached: no Secret read (a pass that only looks at a copy Job)
    for _ in range(3):
        routed.storage_for(parse_uri("s3://team-a-dr/wh/t/dt=1"))
    assert read == ["team-keys"]


def test_a_local_copy_gets_only_the_environment_it_needs() -> None:
    environ = {"PATH": "/usr/bin", "HOME": "/tmp", "AWS_REGION": "eu-west-1", "HIVECAT_S3_ENDPOINT": "http://s3",
               "HIVECAT_JOURNAL_URL": "mysql://j:journal-password@db/j", "KUBECONFIG": "/k", "POD_NAMESPACE": "x",
               "AWS_ACCESS_KEY_ID": "OPERATOR-KEY", "AWS_SECRET_ACCESS_KEY": "operator-secret"}
    dr = cluster_storage(access("dr", "s3://team-a-dr/wh", "team-keys"), AMBIENT, secrets)
    env = local_environment(dr, "s3", environ)
    assert env == {"PATH": "/usr/bin", "HOME": "/tmp", "AWS_REGION": "eu-west-1", "HIVECAT_S3_ENDPOINT": "http://s3",
                   "AWS_ACCESS_KEY_ID": "TEAM-KEY", "AWS_SECRET_ACCESS_KEY": "team-secret"}
    to_disk = local_environment(AMBIENT, "file", environ)  # a local secondary: no cloud identity at all
    assert "AWS_ACCESS_KEY_ID" not in to_disk and "HIVECAT_JOURNAL_URL" not in to_disk
    assert local_environment(AMBIENT, "hdfs", environ)["HADOOP_USER_NAME"] == "hive"
