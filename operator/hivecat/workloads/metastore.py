"""The Thrift Hive Metastore of a Thrift or Hybrid catalog: its ConfigMap (hive-site.xml), Deployment and
Service, and the config hash that rolls its pods.

The database password never appears in any object, nor on any process's command line: the pod gets it from
the Secret as the env var HIVECAT_DB_PASSWORD, and hive-site.xml sets javax.jdo.option.ConnectionPassword to
the reference `${env.HIVECAT_DB_PASSWORD}`, which Hadoop's Configuration resolves from the environment when
the metastore (or schematool, in the schema Job that mounts the same ConfigMap) reads the password
(MetastoreConf.getPassword -> Configuration.getPassword -> get; `${env.NAME}` since Hadoop 3.0, HADOOP-9642).
Anyone who can read ConfigMaps, Deployments or Pods sees the reference, never the password, and `ps` or
/proc/<pid>/cmdline inside the pod show no password either.

A kerberized catalog (spec.kerberos) serves SASL GSSAPI only. Its keytab Secret's one key is mounted as one file
(KEYTAB_DIR), which hive-site.xml names by the same kind of reference, `${env.HIVECAT_METASTORE_KEYTAB}`; the
ConfigMap adds core-site.xml (hadoop.security.authentication=kerberos, read by Hadoop's login from the class
path, where HIVE_CONF_DIR is) and the operator's krb5.conf, which the JVM is pointed at through
HIVE_METASTORE_HADOOP_OPTS (bin/ext/metastore.sh puts it into HADOOP_OPTS). No key is in any object.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from hivecat.catalog.hive_site import hive_site_xml, mariadb_jdbc, postgresql_jdbc
from hivecat.kinds import ANNOTATION_CONFIG_HASH, COMPONENT
from hivecat.specs.mode import HIVE_SITE
from hivecat.specs.hivecatalog import DatabaseSpec, HiveCatalogSpec
from hivecat.workloads.keytab_volume import KEYTAB_FILE, KEYTAB_FS_GROUP, keytab_volume
from hivecat.workloads.labels import METASTORE, METASTORE_CONFIG, catalog_labels, object_name

CONTAINER: Final = "metastore"
PORT_NAME: Final = "thrift"
CONF_DIR: Final = "/etc/hive-conf"  # HIVE_CONF_DIR: the ConfigMap, mounted read-only
CONF_VOLUME: Final = "hive-conf"
HIVE_SITE_KEY: Final = "hive-site.xml"
PASSWORD_ENV: Final = "HIVECAT_DB_PASSWORD"
PASSWORD_PROPERTY: Final = "javax.jdo.option.ConnectionPassword"
# Not a secret: a reference that Hadoop's Configuration substitutes from the container's environment.
PASSWORD_REFERENCE: Final = f"${{env.{PASSWORD_ENV}}}"
DERBY_DIR: Final = "/var/lib/hivecat/derby"  # an emptyDir: Derby's data lives and dies with the pod
DERBY_VOLUME: Final = "derby"
DERBY_DRIVER: Final = "org.apache.derby.jdbc.EmbeddedDriver"
# The notification log (spec.notificationEvents): Hive's DbNotificationListener, from the hcatalog directory of
# Apache Hive's binary distribution (the apache/hive images), which bin/hive adds through HIVE_AUX_JARS_PATH.
LISTENERS_PROPERTY: Final = "hive.metastore.transactional.event.listeners"
NOTIFICATION_LISTENER: Final = "org.apache.hive.hcatalog.listener.DbNotificationListener"
AUX_JARS_ENV: Final = "HIVE_AUX_JARS_PATH"
# spec.kerberos: the metastore's keytab, its realms and KDCs, and Hadoop's switch to Kerberos.
CORE_SITE_KEY: Final = "core-site.xml"
KRB5_CONF_KEY: Final = "krb5.conf"
KEYTAB_ENV: Final = "HIVECAT_METASTORE_KEYTAB"
KEYTAB_DIR: Final = "/var/run/secrets/hivecat/metastore"
KEYTAB_VOLUME: Final = "keytab"
JVM_OPTIONS_ENV: Final = "HIVE_METASTORE_HADOOP_OPTS"
SASL_PROPERTY: Final = "hive.metastore.sasl.enabled"
PRINCIPAL_PROPERTY: Final = "hive.metastore.kerberos.principal"
KEYTAB_PROPERTY: Final = "hive.metastore.kerberos.keytab.file"
AUTHENTICATION_PROPERTY: Final = "hadoop.security.authentication"


def listener_jar(hive_version: str) -> str:
    """Its path in the image: $(HIVE_HOME), which the kubelet expands from the container's HIVE_HOME."""
    return f"$(HIVE_HOME)/hcatalog/share/hcatalog/hive-hcatalog-server-extensions-{hive_version}.jar"

# Constant scripts: every value from the spec reaches them as an env var, quoted, never spliced into shell
# text; the password is not among their arguments (hive-site.xml refers to it). A shell to expand $HIVE_HOME.
_START: Final = '"$HIVE_HOME/bin/hive" --service metastore'
SERVER_SCRIPT: Final = f"exec {_START}"
# Derby sits in the pod's own emptyDir, out of reach of a schema Job, so the pod initializes its schema
# itself on first start (development only; the data is lost with the pod).
DERBY_SCRIPT: Final = (f'[ -d {DERBY_DIR}/metastore_db ] || "$HIVE_HOME/bin/schematool" -dbType derby '
                       f'-initSchema || exit 1; exec {_START}')


def metastore_name(spec: HiveCatalogSpec) -> str:
    """Name of the Deployment and of the Service."""
    return object_name(spec.name, METASTORE)


def metastore_config_map_name(spec: HiveCatalogSpec) -> str:
    return object_name(spec.name, METASTORE_CONFIG)


def metastore_endpoint(spec: HiveCatalogSpec) -> str:
    """The Service's Thrift URI, as pods in the cluster reach it (the cluster domain is left to DNS search)."""
    return f"thrift://{metastore_name(spec)}.{spec.namespace}.svc:{spec.metastore.port}"


def _database(spec: HiveCatalogSpec) -> DatabaseSpec:
    if spec.database is None:
        raise ValueError(f"a {spec.mode} catalog runs no metastore: it has no spec.database")
    return spec.database


def server_properties(spec: HiveCatalogSpec) -> dict[str, str]:
    """The metastore's hive-site.xml properties: the user's hive-site classification, then what the operator
    owns (connection, port, schema handling), which wins. The password only as PASSWORD_REFERENCE."""
    db = _database(spec)
    if db.dialect == "derby":
        url, driver = f"jdbc:derby:;databaseName={DERBY_DIR}/metastore_db;create=true", DERBY_DRIVER
    else:
        assert db.host and db.name  # parse_hive_catalog requires them for every engine but Derby
        jdbc = (mariadb_jdbc if db.dialect == "mysql" else postgresql_jdbc)(db.host, db.port, db.name)
        url, driver = jdbc.url, jdbc.driver
    owned = {
        "javax.jdo.option.ConnectionURL": url,
        "javax.jdo.option.ConnectionDriverName": driver,
        "hive.metastore.port": str(spec.metastore.port),
        # The schema belongs to the schema Job (schematool); the metastore only checks it, never alters it.
        "hive.metastore.schema.verification": "true",
        "datanucleus.schema.autoCreateAll": "false",
    }
    if db.user:
        owned["javax.jdo.option.ConnectionUserName"] = db.user
    if db.password is not None:
        owned[PASSWORD_PROPERTY] = PASSWORD_REFERENCE
    if spec.metastore.warehouse_dir:
        owned["hive.metastore.warehouse.dir"] = spec.metastore.warehouse_dir
    # A password here would be published in a ConfigMap: none, whatever a hand-made body said.
    user = {k: v for k, v in spec.configurations.get(HIVE_SITE, {}).items() if k != PASSWORD_PROPERTY}
    if spec.notification_events:  # the user's own transactional listeners stay, the notification listener joins
        listeners = [name.strip() for name in user.get(LISTENERS_PROPERTY, "").split(",") if name.strip()]
        owned[LISTENERS_PROPERTY] = ",".join(dict.fromkeys([*listeners, NOTIFICATION_LISTENER]))
    if spec.kerberos is not None:
        owned.update({SASL_PROPERTY: "true", PRINCIPAL_PROPERTY: spec.kerberos.metastore_principal,
                      KEYTAB_PROPERTY: f"${{env.{KEYTAB_ENV}}}", AUTHENTICATION_PROPERTY: "kerberos"})
    return {**user, **owned}


def metastore_config_map(spec: HiveCatalogSpec, krb5_conf: str | None = None) -> dict[str, Any]:
    """ConfigMap <catalog>-metastore-config with the server's hive-site.xml (also mounted by the schema Job); for a
    kerberized catalog also core-site.xml and `krb5_conf`, the operator's realms and KDCs (None: the image's)."""
    data = {HIVE_SITE_KEY: hive_site_xml(server_properties(spec))}
    if spec.kerberos is not None:
        data[CORE_SITE_KEY] = hive_site_xml({AUTHENTICATION_PROPERTY: "kerberos"})
        if krb5_conf is not None:
            data[KRB5_CONF_KEY] = krb5_conf
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": metastore_config_map_name(spec), "namespace": spec.namespace,
                     "labels": catalog_labels(spec.name, COMPONENT.metastore)},
        "data": data,
    }


def config_hash(spec: HiveCatalogSpec, secret_resource_version: str | None, krb5_conf: str | None = None,
                keytab_resource_version: str | None = None) -> str:
    """sha256 (hex) over what shapes the metastore pods and the password (and keytab) Secret's resourceVersion:
    a spec change or a rotation changes the pod template's annotation, so the Deployment rolls. Replicas,
    the catalog's metadata and the Glue settings are not part of it: they do not need new pods."""
    db = _database(spec)
    m = spec.metastore
    shape = {
        "hiveSite": metastore_config_map(spec, krb5_conf)["data"],
        "image": m.image, "imagePullPolicy": m.image_pull_policy, "port": m.port, "resources": m.resources,
        "hiveVersion": m.hive_version, "hiveHome": m.hive_home,
        "password": [db.password.name, db.password.key] if db.password else None,
        "secretResourceVersion": secret_resource_version,
    }
    if spec.kerberos is not None:  # only then: an unkerberized catalog's pods keep their hash across upgrades
        shape["keytab"] = [spec.kerberos.metastore_keytab_secret, spec.kerberos.metastore_keytab_key,
                           keytab_resource_version]
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()


def _container(spec: HiveCatalogSpec, krb5_conf: bool) -> dict[str, Any]:
    db = _database(spec)
    m = spec.metastore
    env: list[dict[str, Any]] = [{"name": "HIVE_HOME", "value": m.hive_home},
                                 {"name": "HIVE_CONF_DIR", "value": CONF_DIR}]
    if spec.notification_events:
        env.append({"name": AUX_JARS_ENV, "value": listener_jar(m.hive_version)})
    mounts = [{"name": CONF_VOLUME, "mountPath": CONF_DIR, "readOnly": True}]
    if spec.kerberos is not None:
        env.append({"name": KEYTAB_ENV, "value": f"{KEYTAB_DIR}/{KEYTAB_FILE}"})
        mounts.append({"name": KEYTAB_VOLUME, "mountPath": KEYTAB_DIR, "readOnly": True})
        if krb5_conf:
            env.append({"name": JVM_OPTIONS_ENV, "value": f"-Djava.security.krb5.conf={CONF_DIR}/{KRB5_CONF_KEY}"})
    if db.password is not None:
        env.append({"name": PASSWORD_ENV,
                    "valueFrom": {"secretKeyRef": {"name": db.password.name, "key": db.password.key}}})
        script = SERVER_SCRIPT
    else:  # Derby: no password, and a directory for its files
        script = DERBY_SCRIPT
        mounts.append({"name": DERBY_VOLUME, "mountPath": DERBY_DIR})
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": m.image,
        "command": ["sh", "-c", script],
        "env": env,
        "ports": [{"name": PORT_NAME, "containerPort": m.port, "protocol": "TCP"}],
        # Ready once the Thrift port accepts connections, i.e. after the schema verification passed.
        "readinessProbe": {"tcpSocket": {"port": PORT_NAME}, "periodSeconds": 5, "failureThreshold": 3},
        "volumeMounts": mounts,
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    if m.image_pull_policy:
        container["imagePullPolicy"] = m.image_pull_policy
    if m.resources:
        container["resources"] = dict(m.resources)
    return container


def metastore_deployment(spec: HiveCatalogSpec, config_hash: str, krb5_conf: bool = False) -> dict[str, Any]:
    """Deployment <catalog>-metastore; `config_hash` from config_hash() goes on the pod template; `krb5_conf`:
    its ConfigMap holds the operator's krb5.conf (metastore_config_map)."""
    labels = catalog_labels(spec.name, COMPONENT.metastore)
    volumes: list[dict[str, Any]] = [{"name": CONF_VOLUME, "configMap": {"name": metastore_config_map_name(spec)}}]
    if spec.kerberos is not None:  # the one key, as one file only the pod reads
        volumes.append(keytab_volume(KEYTAB_VOLUME, spec.kerberos.metastore_keytab_secret,
                                     spec.kerberos.metastore_keytab_key))
    derby = _database(spec).dialect == "derby"
    if derby:
        volumes.append({"name": DERBY_VOLUME, "emptyDir": {}})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": metastore_name(spec), "namespace": spec.namespace, "labels": labels},
        "spec": {
            "replicas": spec.metastore.replicas,
            "selector": {"matchLabels": dict(labels)},
            # Derby allows one process on its files: the old pod goes before the new one starts.
            "strategy": {"type": "Recreate"} if derby else {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": dict(labels), "annotations": {ANNOTATION_CONFIG_HASH: config_hash}},
                "spec": {
                    "automountServiceAccountToken": False,  # the metastore never calls the Kubernetes API
                    "enableServiceLinks": False,  # no <SERVICE>_PORT variables clashing with Hive's scripts
                    **({"securityContext": {"fsGroup": KEYTAB_FS_GROUP}} if spec.kerberos is not None else {}),
                    "containers": [_container(spec, krb5_conf)],
                    "volumes": volumes,
                },
            },
        },
    }


def metastore_service(spec: HiveCatalogSpec) -> dict[str, Any]:
    """ClusterIP Service <catalog>-metastore on the Thrift port."""
    labels = catalog_labels(spec.name, COMPONENT.metastore)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": metastore_name(spec), "namespace": spec.namespace, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "selector": dict(labels),
            "ports": [{"name": PORT_NAME, "port": spec.metastore.port, "targetPort": PORT_NAME,
                       "protocol": "TCP"}],
        },
    }
