"""A kerberized HiveCatalog (spec.kerberos) without a KDC: what its spec may say, what the policy must grant, the
metastore's objects (SASL, the keytab as one mounted file, core-site.xml and the operator's krb5.conf), what clients
are told, and a pass that checks both keytabs before it writes anything. (The operator tier runs it for real:
tests/operator/test_clusterstorage_kerberos.py.)"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from hivecat import reasons
from hivecat.act.hivecatalog import Pass
from hivecat.reconcile.access import Defaults, check_hive_catalog, namespace_policy
from hivecat.reconcile.clusterstorage import backends_of
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.specs import HiveCatalogSpec, parse_hive_catalog
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.kerberos import CatalogKerberos, KerberosSpec
from hivecat.specs.policy import parse_catalog_policy
from hivecat.workloads.client_config import client_config_map
from hivecat.workloads.discovery import discovery_config_map
from hivecat.workloads.metastore import config_hash, metastore_config_map, metastore_deployment
from support.catalog_ports import FakePorts
from support.keytabs import keytab

SERVICE = "hive/sales-metastore.data.svc.cluster.local@CORP.EXAMPLE.COM"
KERBEROS = {"principal": "etl-data@CORP.EXAMPLE.COM", "keytabSecretRef": {"name": "etl-keytab"},
            "metastorePrincipal": "hive/_HOST@CORP.EXAMPLE.COM",
            "metastoreKeytabSecretRef": {"name": "hive-keytab", "key": "hive.keytab"}}
DATABASE = {"type": "mariadb", "host": "mariadb.db", "name": "hive_sales", "user": "hive",
            "passwordSecretRef": {"name": "sales-db", "key": "password"}}
GLUE = {"region": "eu-west-1"}
FACTORY = {"hive.metastore.client.factory.class": "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"}
REALMS = "[libdefaults]\n default_realm = CORP.EXAMPLE.COM\n"
KEYTABS = {("etl-keytab", "keytab"): keytab("etl-data@CORP.EXAMPLE.COM"),
           ("hive-keytab", "hive.keytab"): keytab(SERVICE)}


def parse(kerberos: dict | None = KERBEROS, **spec: Any) -> HiveCatalogSpec:
    body = {"metadata": {"name": "sales", "namespace": "data", "uid": "u", "generation": 1},
            "spec": {"database": DATABASE, **({"kerberos": kerberos} if kerberos is not None else {}), **spec}}
    return parse_hive_catalog(body, default_image="apache/hive:3.1.3")


def test_a_kerberized_catalog_names_both_logins() -> None:
    spec = parse()
    assert spec.kerberos == CatalogKerberos(KerberosSpec("etl-data@CORP.EXAMPLE.COM", "etl-keytab"),
                                            "hive/_HOST@CORP.EXAMPLE.COM", "hive-keytab", "hive.keytab")
    assert spec.kerberos.metastore == KerberosSpec("hive/_HOST@CORP.EXAMPLE.COM", "hive-keytab", "hive.keytab")
    assert parse(None).kerberos is None


@pytest.mark.parametrize("change, words", [
    ({"metastorePrincipal": "hive@CORP.EXAMPLE.COM"}, "service principal"),
    ({"metastorePrincipal": None}, "service principal"),
    ({"metastoreKeytabSecretRef": None}, "metastoreKeytabSecretRef must be an object|metastoreKeytabSecretRef.name"),
    ({"principal": "etl-data"}, "with its realm"),
    ({"webhdfsPrincipal": "HTTP/_HOST@R"}, "belongs to a ClusterStorage"),
])
def test_malformed_catalog_logins_are_refused(change: dict, words: str) -> None:
    kerberos = {k: v for k, v in {**KERBEROS, **change}.items() if v is not None}
    with pytest.raises(SpecInvalid, match=words):
        parse(kerberos)


def test_a_glue_catalog_runs_no_metastore_to_kerberize() -> None:
    with pytest.raises(SpecInvalid, match="a Glue catalog runs none"):
        parse(mode="Glue", glue=GLUE)


def policy(principals: list[str], secrets: list[str]):
    body = {"metadata": {"name": "data"}, "spec": {"namespaces": ["data"], "databases": [{"host": "mariadb.db"}],
                                                   "kerberos": {"principals": principals, "keytabSecrets": secrets}}}
    return namespace_policy("data", None, [parse_catalog_policy(body)], Defaults())


def test_the_policy_must_grant_both_logins() -> None:
    assert check_hive_catalog(parse(), policy(["etl-data@CORP.EXAMPLE.COM", "hive/*@CORP.EXAMPLE.COM"],
                                              ["etl-keytab", "hive-keytab"])) is None
    operator_only = check_hive_catalog(parse(), policy(["etl-data@CORP.EXAMPLE.COM"], ["etl-keytab", "hive-keytab"]))
    assert operator_only is not None and operator_only.reason == reasons.KERBEROS_NOT_ALLOWED
    assert "the metastore's own" in operator_only.message
    stolen = check_hive_catalog(parse(), policy(["*@CORP.EXAMPLE.COM"], ["hive-keytab"]))
    assert stolen is not None and "etl-keytab" in stolen.message


def test_the_metastore_serves_sasl_only_with_its_keytab_as_one_file() -> None:
    spec = parse()
    data = metastore_config_map(spec, REALMS)["data"]
    site = data["hive-site.xml"]
    for name, value in (("hive.metastore.sasl.enabled", "true"),
                        ("hive.metastore.kerberos.principal", "hive/_HOST@CORP.EXAMPLE.COM"),
                        ("hive.metastore.kerberos.keytab.file", "${env.HIVECAT_METASTORE_KEYTAB}")):
        assert f"<name>{name}</name><value>{value}</value>" in site, site
    assert "hadoop.security.authentication" in data["core-site.xml"] and data["krb5.conf"] == REALMS
    assert "krb5.conf" not in metastore_config_map(spec)["data"]  # none given: the image's own
    pod = metastore_deployment(spec, "h", krb5_conf=True)["spec"]["template"]["spec"]
    assert {"name": "keytab", "secret": {"secretName": "hive-keytab", "defaultMode": 0o400,
                                         "items": [{"key": "hive.keytab", "path": "keytab"}]}} in pod["volumes"]
    assert pod["securityContext"] == {"fsGroup": 10001}  # the image's user reads the root-owned file (e2e)
    assert "securityContext" not in metastore_deployment(parse(None), "h")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["HIVECAT_METASTORE_KEYTAB"] == "/var/run/secrets/hivecat/metastore/keytab"
    assert env["HIVE_METASTORE_HADOOP_OPTS"] == "-Djava.security.krb5.conf=/etc/hive-conf/krb5.conf"
    assert {"name": "keytab", "mountPath": "/var/run/secrets/hivecat/metastore", "readOnly": True} in \
        pod["containers"][0]["volumeMounts"]
    plain = parse(None)
    assert "sasl" not in metastore_config_map(plain, REALMS)["data"]["hive-site.xml"]
    assert set(metastore_config_map(plain, REALMS)["data"]) == {"hive-site.xml"}
    # a rotated keytab, or new realms, roll the pods; an unkerberized catalog's hash is as it was
    assert len({config_hash(spec, "1", REALMS, "41"), config_hash(spec, "1", REALMS, "42"),
                config_hash(spec, "1", None, "41")}) == 3
    assert config_hash(plain, "1") == config_hash(plain, "1", REALMS, "41")


def test_clients_are_told_the_metastore_speaks_sasl_in_every_mode_that_reaches_it() -> None:
    def hive_site(spec: HiveCatalogSpec) -> str:
        return client_config_map(spec, None)["data"]["hive-site.xml"]

    def spark(spec: HiveCatalogSpec) -> str:
        return client_config_map(spec, None)["data"]["spark-defaults.conf"]

    thrift = parse(configurations=[{"classification": "hive-site", "properties": {
        "hive.metastore.sasl.enabled": "false"}}])  # a user's value never turns SASL off
    assert "<value>false</value>" not in hive_site(thrift)
    for text in (hive_site(thrift), spark(thrift)):
        assert "hive.metastore.sasl.enabled" in text and "hive/_HOST@CORP.EXAMPLE.COM" in text
    hybrid = parse(glue=GLUE, configurations=[{"classification": "spark-hive-site", "properties": FACTORY}])
    assert hybrid.mode == "Hybrid"
    assert "hive.metastore.sasl.enabled" in hive_site(hybrid)  # Hive keeps the metastore
    assert "sasl" not in spark(hybrid)                        # Spark uses Glue
    assert discovery_config_map(thrift, None)["data"]["HIVE_KERBEROS_PRINCIPAL"] == "hive/_HOST@CORP.EXAMPLE.COM"
    assert "sasl" not in hive_site(parse(None))


def test_drift_scans_through_thrift_use_the_catalogs_login() -> None:
    (backend,) = backends_of(parse(), "Thrift", None)
    assert backend.kerberos == parse().kerberos
    (database,) = backends_of(parse(), "Database", None)
    assert database.kerberos is None  # the database takes its password, not Kerberos


def run(ports: FakePorts, spec: HiveCatalogSpec | None = None):
    outcome = Pass(spec or parse(), None, ports, WorkloadPolicy()).run()
    text = json.dumps([ports.applied, [c.message for c in outcome.conditions], [e.message for e in outcome.events]])
    for data in (d for d in ports.keytabs.values() if len(d) > 4):
        assert base64.b64encode(data).decode() not in text and data.decode("latin-1") not in text
    return outcome, {c.type: (c.status, c.reason) for c in outcome.conditions}


def test_a_kerberized_pass_deploys_and_probes_as_the_catalogs_login() -> None:
    ports = FakePorts(keytabs=KEYTABS, realms=REALMS)
    outcome, conditions = run(ports)
    assert conditions["Ready"] == ("True", "Ready"), outcome.conditions
    assert ports.sasl is not None and ports.sasl.principal == "hive/_HOST@CORP.EXAMPLE.COM"
    assert ports.sasl.login.principal == "etl-data@CORP.EXAMPLE.COM"
    assert ports.objects["ConfigMap", "sales-metastore-config"]["data"]["krb5.conf"] == REALMS
    annotations = ports.objects["Deployment", "sales-metastore"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"hivecatalog.io/config-hash": config_hash(parse(), "17", REALMS, "41")}


@pytest.mark.parametrize("keytabs, reason, words", [
    ({("etl-keytab", "keytab"): KEYTABS["etl-keytab", "keytab"]}, reasons.SECRET_NOT_FOUND, "hive-keytab"),
    ({**KEYTABS, ("hive-keytab", "hive.keytab"): b"PK\x03\x04"}, reasons.KEYTAB_MISMATCH, "is no keytab"),
    ({**KEYTABS, ("hive-keytab", "hive.keytab"): keytab("HTTP/nn@CORP.EXAMPLE.COM")}, reasons.KEYTAB_MISMATCH,
     "holds no key for hive/_HOST@CORP.EXAMPLE.COM; it holds HTTP/nn@CORP.EXAMPLE.COM"),
    ({**KEYTABS, ("etl-keytab", "keytab"): keytab("intruder@CORP.EXAMPLE.COM")}, reasons.KEYTAB_MISMATCH,
     "holds no key for etl-data@CORP.EXAMPLE.COM"),
    ({("hive-keytab", "hive.keytab"): KEYTABS["hive-keytab", "hive.keytab"], ("etl-keytab", "etl"): b"x"},
     reasons.SECRET_KEY_NOT_FOUND, "no key 'keytab'"),
])
def test_a_wrong_keytab_is_a_condition_and_nothing_is_written(keytabs: dict, reason: str, words: str) -> None:
    ports = FakePorts(keytabs=keytabs, realms=REALMS)
    outcome, conditions = run(ports)
    assert conditions["Ready"] == ("False", reason)
    assert words in next(c.message for c in outcome.conditions if c.type == "Ready")
    assert ports.applied == [] and "login" not in ports.calls and "probe_thrift" not in ports.calls
