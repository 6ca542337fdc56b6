"""Kerberos in the specs and the policy: what a ClusterStorage may ask for, what a CatalogPolicy grants, where the
operator keeps a namespace's keytab, and what a Local copy is given of it. No KDC needed (the integration tier has
tests/integration/test_kerberos_hdfs.py)."""

from __future__ import annotations

import os
import stat

import pytest

from hivecat import reasons
from hivecat.copy.storage import Storage, WebHdfsSettings
from hivecat.kerberos.login import KerberosLogin
from hivecat.kerberos.store import KeytabStore
from hivecat.reconcile.access import Defaults, cluster_access, namespace_policy
from hivecat.replication.launch.local import local_environment
from hivecat.replication.routes import ClusterAccess, cluster_storage
from hivecat.specs.clusterstorage import parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.kerberos import KerberosSpec
from hivecat.specs.policy import parse_catalog_policy

KERBEROS = {"principal": "etl-a@CORP.EXAMPLE.COM", "keytabSecretRef": {"name": "team-a-keytab"}}


def storage(filesystem: str = "hdfs://nn:8020", kerberos: dict | None = KERBEROS):
    body = {"metadata": {"name": "dr", "namespace": "team-a"},
            "spec": {"catalogRef": {"name": "sales"}, "filesystem": filesystem,
                     **({"kerberos": kerberos} if kerberos is not None else {})}}
    return parse_cluster_storage(body, default_scan_interval=1800)


def policy(kerberos: dict | None):
    body = {"metadata": {"name": "team-a"}, "spec": {"namespaces": ["team-a"],
                                                      "storage": [{"prefix": "hdfs://nn:8020"}],
                                                      **({"kerberos": kerberos} if kerberos is not None else {})}}
    return namespace_policy("team-a", None, [parse_catalog_policy(body)], Defaults())


def test_a_cluster_storage_names_its_login_and_the_namenodes_principal_defaults_to_its_realm() -> None:
    spec = storage()
    assert spec.kerberos == KerberosSpec("etl-a@CORP.EXAMPLE.COM", "team-a-keytab", "keytab", None)
    assert spec.kerberos.http_principal == "HTTP/_HOST@CORP.EXAMPLE.COM"
    custom = storage(kerberos={**KERBEROS, "webhdfsPrincipal": "HTTP/_HOST@WEB.EXAMPLE.COM",
                               "keytabSecretRef": {"name": "k", "key": "etl.keytab"}})
    assert custom.kerberos.http_principal == "HTTP/_HOST@WEB.EXAMPLE.COM" and custom.kerberos.keytab_key == "etl.keytab"
    assert storage(kerberos=None).kerberos is None


@pytest.mark.parametrize("filesystem, kerberos, words", [
    ("s3://bucket/w", KERBEROS, "applies to hdfs://"),
    ("hdfs://nn:8020", {**KERBEROS, "principal": "etl-a"}, "with its realm"),
    ("hdfs://nn:8020", {**KERBEROS, "principal": "a b@R"}, "with its realm"),
    ("hdfs://nn:8020", {"principal": "a@R"}, "keytabSecretRef.name is required"),
    ("hdfs://nn:8020", {**KERBEROS, "webhdfsPrincipal": "HTTP@R"}, "service principal"),
])
def test_malformed_logins_are_refused(filesystem: str, kerberos: dict, words: str) -> None:
    with pytest.raises(SpecInvalid, match=words):
        storage(filesystem, kerberos)


def test_a_policy_grants_principals_by_pattern_with_their_secrets_only() -> None:
    granted = policy({"principals": ["etl-*@CORP.EXAMPLE.COM"], "keytabSecrets": ["team-a-keytab"]})
    spec = storage()
    assert granted.check_kerberos(spec.kerberos, "spec.kerberos") is None
    for other in (KerberosSpec("etl-a@OTHER.COM", "team-a-keytab"), KerberosSpec("hdfs@CORP.EXAMPLE.COM",
                                                                                  "team-a-keytab"),
                  KerberosSpec("etl-a@CORP.EXAMPLE.COM", "someone-elses-keytab")):
        violation = granted.check_kerberos(other, "spec.kerberos")
        assert violation is not None and violation.reason == reasons.KERBEROS_NOT_ALLOWED
    refused = policy(None).check_kerberos(spec.kerberos, "spec.kerberos")
    assert refused is not None and "not a Kerberos login the cluster administrator grants" in refused.message
    with pytest.raises(SpecInvalid, match="name both"):
        policy({"principals": ["a@R"]})
    with pytest.raises(SpecInvalid, match="must name its realm"):
        policy({"principals": ["etl-a"], "keytabSecrets": ["k"]})


# Hostile: a kerberized ClusterStorage whose login is not granted is never reached, not even with the operator's
# own identity as a fallback (a ClusterStorage with a login needs no credentialsSecretRef).
def test_cluster_access_carries_the_granted_login_and_refuses_any_other() -> None:
    granted = policy({"principals": ["etl-a@CORP.EXAMPLE.COM"], "keytabSecrets": ["team-a-keytab"]})
    spec = storage()
    access = cluster_access(granted, "dr", spec.filesystem, None, None, spec.kerberos)
    assert isinstance(access, ClusterAccess) and access.kerberos == spec.kerberos
    refused = cluster_access(policy(None), "dr", spec.filesystem, None, None, spec.kerberos)
    assert not isinstance(refused, ClusterAccess) and refused.reason == reasons.KERBEROS_NOT_ALLOWED


def test_the_storage_of_a_kerberized_cluster_is_its_login_never_the_operators() -> None:
    ambient = Storage(webhdfs=WebHdfsSettings((("nn:8020", "https://nn:9871"),), "operator",
                                              KerberosLogin("operator@CORP.EXAMPLE.COM", "/op.keytab"), "/ca.pem"))
    spec = storage()
    logins = []
    routed = cluster_storage(ClusterAccess("dr", spec.filesystem, None, kerberos=spec.kerberos), ambient,
                             lambda secret: pytest.fail("no credentials Secret is read"),
                             lambda kerberos: logins.append(kerberos) or KerberosLogin(kerberos.principal, "/ns.keytab"))
    assert logins == [spec.kerberos]
    assert routed.webhdfs == WebHdfsSettings((("nn:8020", "https://nn:9871"),), None,
                                             KerberosLogin("etl-a@CORP.EXAMPLE.COM", "/ns.keytab"), "/ca.pem",
                                             "HTTP/_HOST@CORP.EXAMPLE.COM")
    env = local_environment(routed, "hdfs", {"PATH": "/bin", "KRB5_CONFIG": "/etc/hivecat/krb5.conf",
                                              "KRB5CCNAME": "FILE:/tmp/operator-cache"})
    assert env == {"PATH": "/bin", "KRB5_CONFIG": "/etc/hivecat/krb5.conf",
                   "HIVECAT_KERBEROS_PRINCIPAL": "etl-a@CORP.EXAMPLE.COM", "HIVECAT_KERBEROS_KEYTAB": "/ns.keytab",
                   "HIVECAT_WEBHDFS_PRINCIPAL": "HTTP/_HOST@CORP.EXAMPLE.COM"}  # never the operator's ticket cache


def test_keytabs_are_private_files_and_a_rotated_keytab_is_a_new_login(tmp_path) -> None:
    store = KeytabStore(tmp_path / "keytabs")
    first = store.login("team-a", "etl-a@R", b"\x05\x02first")
    assert stat.S_IMODE(os.stat(first.keytab).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "keytabs").st_mode) == 0o700
    assert store.login("team-a", "etl-a@R", b"\x05\x02first") == first
    other = store.login("team-b", "etl-a@R", b"\x05\x02first")  # another namespace: another file and cache
    assert other.keytab != first.keytab and other.store["ccache"] != first.store["ccache"]
    rotated = store.login("team-a", "etl-a@R", b"\x05\x02second")
    assert rotated.keytab != first.keytab and not os.path.exists(first.keytab) and os.path.exists(other.keytab)
    assert open(rotated.keytab, "rb").read() == b"\x05\x02second"
