"""The HiveCatalog's Kubernetes objects, built without a server: names and labels, the metastore's
ConfigMap, Deployment and Service, the client and discovery ConfigMaps (files checked verbatim), the
config hash, and that no password reaches any manifest."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from hivecat.kinds import ANNOTATION_CONFIG_HASH
from hivecat.specs.mode import GLUE_CLIENT_FACTORY
from hivecat.specs import HiveCatalogSpec, parse_hive_catalog
from hivecat.workloads.client_config import client_config_map, spark_defaults_conf
from hivecat.workloads.discovery import discovery_config_map
from hivecat.workloads.labels import catalog_labels, label_value, object_name
from hivecat.workloads.metastore import (config_hash, metastore_config_map, metastore_config_map_name,
                                         metastore_deployment, metastore_endpoint, metastore_service,
                                         server_properties)

IMAGE = "apache/hive:3.1.3"
FACTORY = {"hive.metastore.client.factory.class": GLUE_CLIENT_FACTORY}
PASSWORD = "s3cr3t-Pa55"  # what the Secret would hold: it must appear nowhere
DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def parse(name: str, spec: dict[str, Any], namespace: str = "data") -> HiveCatalogSpec:
    return parse_hive_catalog({"metadata": {"name": name, "namespace": namespace, "uid": "u", "generation": 1},
                               "spec": spec}, default_image=IMAGE)


def mariadb() -> HiveCatalogSpec:
    return parse("analytics", {
        "metastore": {"replicas": 2, "warehouseDir": "hdfs://nn:8020/user/hive/warehouse",
                      "resources": {"requests": {"cpu": "500m"}}},
        "database": {"type": "mariadb", "host": "mariadb.db", "name": "hive_analytics", "user": "hive",
                     "passwordSecretRef": {"name": "analytics-db", "key": "password"}},
        "configurations": [{"classification": "hive-site", "properties": {"hive.metastore.try.direct.sql": "true"}},
                           {"classification": "spark-defaults", "properties": {"spark.executor.cores": "2"}}],
    })


def postgresql() -> HiveCatalogSpec:
    return parse("finance", {
        "metastore": {"image": "apache/hive:4.0.1", "imagePullPolicy": "IfNotPresent", "hiveVersion": "4.0.1",
                      "warehouseDir": "s3a://finance/warehouse"},
        "database": {"type": "postgresql", "host": "pg.db", "name": "hms", "user": "hms_finance",
                     "passwordSecretRef": {"name": "finance-db", "key": "db-password"}},
    })


def glue() -> HiveCatalogSpec:
    return parse("lake", {
        "configurations": [{"classification": "hive-site", "properties": FACTORY},
                           {"classification": "spark-hive-site", "properties": FACTORY}],
        "glue": {"region": "eu-west-1", "catalogId": "123456789012", "endpoint": "https://glue.vpce.example",
                 "credentialsSecretRef": {"name": "lake-aws"}},
    })


def hybrid() -> HiveCatalogSpec:
    return parse("migration", {
        "configurations": [{"classification": "spark-hive-site", "properties": FACTORY}],
        "database": {"type": "mysql", "host": "mysql.db", "name": "hive_migration", "user": "hive",
                     "passwordSecretRef": {"name": "migration-db"}},
        "glue": {"region": "us-east-1"},
    })


def manifests(spec: HiveCatalogSpec) -> list[dict[str, Any]]:
    out = [client_config_map(spec, None), discovery_config_map(spec, None)]
    if spec.database is not None and spec.mode != "Glue":
        out += [metastore_config_map(spec), metastore_deployment(spec, config_hash(spec, "42")),
                metastore_service(spec)]
    return out


def xml(properties: dict[str, str]) -> str:
    rows = "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in properties.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


# --- names and labels --------------------------------------------------------------------------------------

def test_names_are_the_catalogs_with_a_suffix() -> None:
    spec = mariadb()
    assert [m["metadata"]["name"] for m in manifests(spec)] == [
        "analytics-client", "analytics", "analytics-metastore-config", "analytics-metastore", "analytics-metastore"]
    assert {m["metadata"]["namespace"] for m in manifests(spec)} == {"data"}
    assert all("ownerReferences" not in m["metadata"] for m in manifests(spec))  # the handler adopts them


def test_labels_follow_the_design() -> None:
    assert catalog_labels("analytics", "metastore") == {
        "app.kubernetes.io/managed-by": "hivecat", "app.kubernetes.io/part-of": "analytics",
        "app.kubernetes.io/component": "metastore", "hivecatalog.io/hivecatalog": "analytics"}
    components = {m["metadata"]["name"]: m["metadata"]["labels"]["app.kubernetes.io/component"]
                  for m in manifests(mariadb())}
    assert components == {"analytics-client": "client-config", "analytics": "client-config",
                          "analytics-metastore-config": "metastore", "analytics-metastore": "metastore"}


@pytest.mark.parametrize("catalog", ["a" * 253, "x" * 60, "team.analytics.prod", "1st-catalog"])
def test_names_and_label_values_fit_for_any_catalog_name(catalog: str) -> None:
    spec = dataclasses.replace(mariadb(), name=catalog)
    for manifest in manifests(spec):
        name = manifest["metadata"]["name"]
        if manifest["metadata"]["labels"]["app.kubernetes.io/component"] == "client-config" and name == catalog:
            continue  # the discovery ConfigMap: exactly the catalog's name, valid as any ConfigMap name is
        assert len(name) <= 63 and DNS_LABEL.fullmatch(name), name
        for value in manifest["metadata"]["labels"].values():
            assert len(value) <= 63 and re.fullmatch(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?", value)
    assert object_name(catalog, "metastore") == object_name(catalog, "metastore")  # deterministic
    assert object_name(catalog, "metastore").endswith("-metastore")


def test_long_names_stay_apart() -> None:
    a, b = "a" * 70 + "x", "a" * 70 + "y"
    assert object_name(a, "client") != object_name(b, "client")
    assert label_value(a) != label_value(b) and len(label_value(a)) <= 63
    assert object_name("sales", None) == "sales" and label_value("sales") == "sales"


# --- the metastore -----------------------------------------------------------------------------------------

def test_mariadb_metastore_config_verbatim() -> None:
    assert metastore_config_map(mariadb()) == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "analytics-metastore-config", "namespace": "data",
                     "labels": catalog_labels("analytics", "metastore")},
        "data": {"hive-site.xml": xml({
            "datanucleus.schema.autoCreateAll": "false",
            "hive.metastore.port": "9083",
            "hive.metastore.schema.verification": "true",
            "hive.metastore.transactional.event.listeners": "org.apache.hive.hcatalog.listener.DbNotificationListener",
            "hive.metastore.try.direct.sql": "true",
            "hive.metastore.warehouse.dir": "hdfs://nn:8020/user/hive/warehouse",
            "javax.jdo.option.ConnectionDriverName": "org.mariadb.jdbc.Driver",
            "javax.jdo.option.ConnectionPassword": "${env.HIVECAT_DB_PASSWORD}",
            "javax.jdo.option.ConnectionURL": "jdbc:mysql://mariadb.db:3306/hive_analytics?useMysqlMetadata=true",
            "javax.jdo.option.ConnectionUserName": "hive",
        })},
    }
    assert metastore_config_map_name(mariadb()) == "analytics-metastore-config"


def test_postgresql_metastore_config_verbatim() -> None:
    assert metastore_config_map(postgresql())["data"]["hive-site.xml"] == xml({
        "datanucleus.schema.autoCreateAll": "false",
        "hive.metastore.port": "9083",
        "hive.metastore.schema.verification": "true",
        "hive.metastore.transactional.event.listeners": "org.apache.hive.hcatalog.listener.DbNotificationListener",
        "hive.metastore.warehouse.dir": "s3a://finance/warehouse",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionPassword": "${env.HIVECAT_DB_PASSWORD}",
        "javax.jdo.option.ConnectionURL": "jdbc:postgresql://pg.db:5432/hms",
        "javax.jdo.option.ConnectionUserName": "hms_finance",
    })


def test_mariadb_deployment() -> None:
    spec = mariadb()
    deployment = metastore_deployment(spec, "abc123")
    labels = catalog_labels("analytics", "metastore")
    assert deployment["spec"]["replicas"] == 2 and deployment["spec"]["selector"] == {"matchLabels": labels}
    template = deployment["spec"]["template"]
    assert template["metadata"] == {"labels": labels, "annotations": {ANNOTATION_CONFIG_HASH: "abc123"}}
    [container] = template["spec"]["containers"]
    assert container["image"] == IMAGE and "imagePullPolicy" not in container
    # No password on the command line: hive-site.xml refers to the env var (see the ConfigMap above).
    assert container["command"] == ["sh", "-c", 'exec "$HIVE_HOME/bin/hive" --service metastore']
    assert container["env"] == [
        {"name": "HIVE_HOME", "value": "/opt/hive"}, {"name": "HIVE_CONF_DIR", "value": "/etc/hive-conf"},
        # the notification listener, where Apache Hive's distribution keeps it (bin/hive adds aux jars)
        {"name": "HIVE_AUX_JARS_PATH",
         "value": "$(HIVE_HOME)/hcatalog/share/hcatalog/hive-hcatalog-server-extensions-3.1.3.jar"},
        {"name": "HIVECAT_DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "analytics-db", "key": "password"}}}]
    assert container["ports"] == [{"name": "thrift", "containerPort": 9083, "protocol": "TCP"}]
    assert container["readinessProbe"]["tcpSocket"] == {"port": "thrift"}
    assert container["resources"] == {"requests": {"cpu": "500m"}}
    assert container["volumeMounts"] == [{"name": "hive-conf", "mountPath": "/etc/hive-conf", "readOnly": True}]
    assert template["spec"]["volumes"] == [{"name": "hive-conf", "configMap": {"name": "analytics-metastore-config"}}]
    assert template["spec"]["automountServiceAccountToken"] is False


def test_notification_events_disabled_leave_out_the_listener_and_user_listeners_are_kept() -> None:
    listeners = "hive.metastore.transactional.event.listeners"
    quiet = dataclasses.replace(mariadb(), notification_events=False)
    assert listeners not in metastore_config_map(quiet)["data"]["hive-site.xml"]
    [container] = metastore_deployment(quiet, "h")["spec"]["template"]["spec"]["containers"]
    assert "HIVE_AUX_JARS_PATH" not in {e["name"] for e in container["env"]}
    own = dataclasses.replace(mariadb(), configurations={"hive-site": {listeners: "com.example.Audit, x.Y"}})
    assert server_properties(own)[listeners] == (
        "com.example.Audit,x.Y,org.apache.hive.hcatalog.listener.DbNotificationListener")


def test_postgresql_deployment_takes_image_pull_policy_and_hive_home() -> None:
    spec = dataclasses.replace(postgresql(), metastore=dataclasses.replace(postgresql().metastore,
                                                                           hive_home="/usr/lib/hive"))
    [container] = metastore_deployment(spec, "h")["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"]) == ("apache/hive:4.0.1", "IfNotPresent")
    assert {"name": "HIVE_HOME", "value": "/usr/lib/hive"} in container["env"]


def test_derby_initializes_its_own_schema_in_an_empty_dir_and_recreates() -> None:
    spec = parse("dev", {"database": {"type": "derby"}})
    deployment = metastore_deployment(spec, config_hash(spec, None))
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert "-initSchema" in container["command"][2] and "PASSWORD" not in container["command"][2]
    assert [e["name"] for e in container["env"]] == ["HIVE_HOME", "HIVE_CONF_DIR", "HIVE_AUX_JARS_PATH"]
    assert {"name": "derby", "emptyDir": {}} in pod["volumes"]
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert "jdbc:derby:;databaseName=/var/lib/hivecat/derby/metastore_db;create=true" in (
        metastore_config_map(spec)["data"]["hive-site.xml"])


def test_service_and_endpoint() -> None:
    spec = mariadb()
    assert metastore_service(spec) == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "analytics-metastore", "namespace": "data",
                     "labels": catalog_labels("analytics", "metastore")},
        "spec": {"type": "ClusterIP", "selector": catalog_labels("analytics", "metastore"),
                 "ports": [{"name": "thrift", "port": 9083, "targetPort": "thrift", "protocol": "TCP"}]},
    }
    assert metastore_endpoint(spec) == "thrift://analytics-metastore.data.svc:9083"


def test_glue_runs_no_metastore() -> None:
    with pytest.raises(ValueError, match="runs no metastore"):
        metastore_config_map(glue())


# --- the config hash ---------------------------------------------------------------------------------------

def test_config_hash_changes_with_the_pods_shape_and_the_secrets_version_only() -> None:
    spec = mariadb()
    base = config_hash(spec, "100")
    assert re.fullmatch(r"[0-9a-f]{64}", base) and config_hash(spec, "100") == base
    assert config_hash(spec, "101") != base  # the password was rotated
    changed = [
        dataclasses.replace(spec, metastore=dataclasses.replace(spec.metastore, image="apache/hive:4.0.1")),
        dataclasses.replace(spec, metastore=dataclasses.replace(spec.metastore, warehouse_dir="s3a://b/w")),
        dataclasses.replace(spec, configurations={"hive-site": {"hive.metastore.try.direct.sql": "false"}}),
        dataclasses.replace(spec, database=dataclasses.replace(spec.database, host="other.db")),
    ]
    assert all(config_hash(s, "100") != base for s in changed)
    unrelated = [
        dataclasses.replace(spec, generation=7, uid="other", suspend=True, confirm_mode_switch=True),
        dataclasses.replace(spec, metastore=dataclasses.replace(spec.metastore, replicas=5)),
        dataclasses.replace(spec, configurations={**spec.configurations, "spark-defaults": {"spark.x": "1"}}),
    ]
    assert all(config_hash(s, "100") == base for s in unrelated)


# --- client configuration ----------------------------------------------------------------------------------

def test_thrift_client_config_verbatim() -> None:
    config = client_config_map(mariadb(), None)
    assert config["metadata"] == {"name": "analytics-client", "namespace": "data",
                                  "labels": catalog_labels("analytics", "client-config")}
    assert config["data"]["hive-site.xml"] == xml({
        "hive.metastore.try.direct.sql": "true", "hive.metastore.uris": "thrift://analytics-metastore.data.svc:9083"})
    assert config["data"]["spark-defaults.conf"] == (
        "spark.executor.cores 2\n"
        "spark.hadoop.hive.metastore.uris thrift://analytics-metastore.data.svc:9083\n"
        "spark.sql.catalogImplementation hive\n")
    assert json.loads(config["data"]["configurations.json"]) == [
        {"Classification": "hive-site", "Properties": {
            "hive.metastore.try.direct.sql": "true",
            "hive.metastore.uris": "thrift://analytics-metastore.data.svc:9083"}},
        {"Classification": "spark-hive-site", "Properties": {
            "hive.metastore.uris": "thrift://analytics-metastore.data.svc:9083"}},
        {"Classification": "spark-defaults", "Properties": {
            "spark.executor.cores": "2", "spark.sql.catalogImplementation": "hive"}},
    ]


def test_the_endpoint_override_reaches_clients() -> None:
    config = client_config_map(postgresql(), "thrift://127.0.0.1:30983")
    assert config["data"]["hive-site.xml"] == xml({"hive.metastore.uris": "thrift://127.0.0.1:30983"})
    assert config["data"]["spark-defaults.conf"] == (
        "spark.hadoop.hive.metastore.uris thrift://127.0.0.1:30983\nspark.sql.catalogImplementation hive\n")


def test_glue_client_config_verbatim() -> None:
    data = client_config_map(glue(), None)["data"]
    glue_side = {"aws.glue.endpoint": "https://glue.vpce.example", "aws.region": "eu-west-1",
                 "hive.metastore.client.factory.class": GLUE_CLIENT_FACTORY,
                 "hive.metastore.glue.catalogid": "123456789012"}
    assert data["hive-site.xml"] == xml(glue_side)
    assert data["spark-defaults.conf"] == (
        "spark.hadoop.aws.glue.endpoint https://glue.vpce.example\n"
        "spark.hadoop.aws.region eu-west-1\n"
        f"spark.hadoop.hive.metastore.client.factory.class {GLUE_CLIENT_FACTORY}\n"
        "spark.hadoop.hive.metastore.glue.catalogid 123456789012\n"
        "spark.sql.catalogImplementation hive\n")
    assert json.loads(data["configurations.json"]) == [
        {"Classification": "hive-site", "Properties": glue_side},
        {"Classification": "spark-hive-site", "Properties": glue_side},
        {"Classification": "spark-defaults", "Properties": {"spark.sql.catalogImplementation": "hive"}}]


def test_glue_completed_from_hive_site_alone_gets_the_spark_side_too() -> None:
    spec = parse("lake", {"configurations": [{"classification": "hive-site", "properties": FACTORY}],
                          "glue": {"region": "eu-west-1"}})
    assert spec.spark_side_completed
    assert f"spark.hadoop.hive.metastore.client.factory.class {GLUE_CLIENT_FACTORY}\n" in (
        client_config_map(spec, None)["data"]["spark-defaults.conf"])


def test_hybrid_client_config_verbatim() -> None:
    data = client_config_map(hybrid(), None)["data"]
    assert data["hive-site.xml"] == xml({"hive.metastore.uris": "thrift://migration-metastore.data.svc:9083"})
    assert data["spark-defaults.conf"] == (
        "spark.hadoop.aws.region us-east-1\n"
        f"spark.hadoop.hive.metastore.client.factory.class {GLUE_CLIENT_FACTORY}\n"
        "spark.sql.catalogImplementation hive\n")


def test_user_properties_win_except_the_keys_that_choose_the_catalog() -> None:
    spec = dataclasses.replace(mariadb(), configurations={
        "hive-site": {"hive.metastore.uris": "thrift://elsewhere:9083", "hive.exec.scratchdir": "/tmp/x"},
        "spark-hive-site": {"aws.region": "us-west-2", "hive.metastore.client.factory.class": "org.example.F"},
        "spark-defaults": {"spark.sql.catalogImplementation": "in-memory",
                           "spark.hadoop.hive.metastore.uris": "thrift://elsewhere:9083", "spark.app.name": "x"}})
    data = client_config_map(spec, None)["data"]
    assert "elsewhere" not in json.dumps(data) and "org.example.F" not in json.dumps(data)
    assert "<name>hive.exec.scratchdir</name><value>/tmp/x</value>" in data["hive-site.xml"]
    assert data["spark-defaults.conf"] == (
        "spark.app.name x\n"
        "spark.hadoop.hive.metastore.uris thrift://analytics-metastore.data.svc:9083\n"
        "spark.sql.catalogImplementation hive\n")


def test_spark_defaults_values_survive_javas_properties_reader() -> None:
    text = spark_defaults_conf({}, {"spark.a": "=x", "spark.b": " lead", "spark.c": "C:\\dir", "spark.d": "naïve ü"})
    assert text == "spark.a \\=x\nspark.b \\ lead\nspark.c C:\\\\dir\nspark.d naïve ü\n"


@pytest.mark.parametrize("character", ["\n", "\r", "\t", "\f", "\x00", "\x1b", "\x7f"],
                         ids=["LF", "CR", "TAB", "FF", "NUL", "ESC", "DEL"])
@pytest.mark.parametrize("side", ["spark-defaults", "spark-hive-site"])
def test_spark_defaults_refuses_control_characters_rather_than_write_them(character: str, side: str) -> None:
    """Belt and braces (the spec parser refuses them first): a line break would start another property."""
    value = f"nightly{character}spark.driver.extraJavaOptions -Dinjected=true"
    args = ({}, {"spark.app.name": value}) if side == "spark-defaults" else ({"hive.x": value}, {})
    with pytest.raises(ValueError, match=f"spark-defaults.conf: the value of property .* U\\+{ord(character):04X}"):
        spark_defaults_conf(*args)
    with pytest.raises(ValueError, match="the name of property"):
        spark_defaults_conf({}, {f"spark.app{character}name": "x"})


# --- discovery ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make, data", [
    (mariadb, {"MODE": "Thrift", "HIVE": "thrift://analytics-metastore.data.svc:9083"}),
    (glue, {"MODE": "Glue", "GLUE_REGION": "eu-west-1", "GLUE_CATALOG_ID": "123456789012"}),
    (hybrid, {"MODE": "Hybrid", "HIVE": "thrift://migration-metastore.data.svc:9083", "GLUE_REGION": "us-east-1"}),
], ids=["thrift", "glue", "hybrid"])
def test_discovery_config_map(make: Any, data: dict[str, str]) -> None:
    spec = make()
    config = discovery_config_map(spec, None)
    assert config["metadata"]["name"] == spec.name and config["data"] == data


def test_discovery_publishes_the_override() -> None:
    assert discovery_config_map(mariadb(), "thrift://127.0.0.1:1")["data"]["HIVE"] == "thrift://127.0.0.1:1"


# --- no secrets --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [mariadb, postgresql, glue, hybrid])
def test_no_password_in_any_manifest_and_secrets_only_by_reference(make: Any) -> None:
    spec = make()
    text = json.dumps(manifests(spec))
    assert PASSWORD not in text
    # The only password setting anywhere is the metastore's reference to its env var, never a value.
    settings = re.findall(r"ConnectionPassword</name><value>([^<]*)<", text)
    assert settings == (["${env.HIVECAT_DB_PASSWORD}"] if spec.mode != "Glue" else [])
    secret = spec.database.password.name if spec.database and spec.database.password else None
    if spec.mode != "Glue" and secret:
        # The Secret's name appears exactly once: in the Deployment's secretKeyRef.
        assert text.count(secret) == 1 and f'"secretKeyRef": {{"name": "{secret}"' in text
    if spec.glue and spec.glue.credentials:
        assert spec.glue.credentials.name not in text  # the Glue keys are the clients' own business
