"""The Job that runs the metastore image's own schematool: -initSchema on an empty database, or
-upgradeSchemaFrom the version the operator read. Pure: hivecat.workloads.schema decides, the handler
applies the manifest, and SchemaReady comes from reading VERSION afterwards (hivecat.catalog.schema_version),
not from the Job's exit.

The password reaches the container only at run time, from the Secret as the env var HIVECAT_DB_PASSWORD, and
schematool reads it through the mounted hive-site.xml, whose javax.jdo.option.ConnectionPassword is the
reference `${env.HIVECAT_DB_PASSWORD}` (hivecat.workloads.metastore): without -passWord, schematool asks
MetastoreConf.getPassword, which Hadoop's Configuration resolves from the environment. The Job object, the
ConfigMap and every process's command line are free of it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hivecat.workloads.schema import Init, SchemaDecision, Upgrade
from hivecat.workloads.labels import catalog_labels, object_name
from hivecat.workloads.metastore import CONF_DIR, CONF_VOLUME, PASSWORD_ENV, metastore_config_map_name

if TYPE_CHECKING:
    from hivecat.specs.hivecatalog import DatabaseSpec, HiveCatalogSpec

COMPONENT = "schema"
CONTAINER = "schematool"
# CONF_DIR, CONF_VOLUME, PASSWORD_ENV: the metastore's own, so the Job mounts its ConfigMap (hive-site.xml, the
# password only by reference) where the image looks and gets the password as the metastore pod does.
BACKOFF_LIMIT = 1               # schematool is not idempotent mid-way; a retry rarely helps, one is enough
ACTIVE_DEADLINE_SECONDS = 3600  # a large upgrade takes minutes, never an hour
# schematool's -dbType for each dialect.
DB_TYPES: dict[str, str] = {"mysql": "mysql", "postgresql": "postgres"}
# Constant: user-given values reach schematool as "$@", never spliced into shell text. A shell to expand
# $HIVE_HOME; no -passWord, which would put the password in schematool's argv (visible to `ps` in the pod).
SCRIPT = 'exec "$HIVE_HOME/bin/schematool" "$@"'


def _database(spec: HiveCatalogSpec) -> DatabaseSpec:
    """The catalog's database, if a schema Job can serve it."""
    database = spec.database
    if database is None:
        raise ValueError("no schema Job without a metastore database (a Glue catalog has none)")
    if database.dialect not in DB_TYPES:
        # Derby lives inside the metastore pod: a Job cannot reach it, and there is no shared VERSION to read.
        raise ValueError(f"no schema Job for a {database.dialect} database: it is for development only and "
                         "lives in the metastore pod")
    if database.password is None:
        raise ValueError("no schema Job without the database password's Secret reference")
    return database


def _action(decision: SchemaDecision) -> Init | Upgrade:
    if not isinstance(decision, (Init, Upgrade)):
        raise ValueError(f"a schema Job runs only for Init or Upgrade, not {decision.kind}")
    return decision


def schematool_args(spec: HiveCatalogSpec, decision: SchemaDecision) -> list[str]:
    """schematool's arguments, without the password (schematool reads it through hive-site.xml)."""
    action = _action(decision)
    database = _database(spec)
    args = ["-dbType", DB_TYPES[database.dialect]]
    if isinstance(action, Init):
        args.append("-initSchema")
    else:
        args += ["-upgradeSchemaFrom", action.from_version]
    if database.user:
        args += ["-userName", database.user]
    return args


def schema_command(spec: HiveCatalogSpec, decision: SchemaDecision) -> list[str]:
    """The container command: `sh -c SCRIPT schematool ARGS...` ("schematool" is the script's $0)."""
    return ["sh", "-c", SCRIPT, CONTAINER, *schematool_args(spec, decision)]


def _version_slug(version: str) -> str:
    return version.lower().replace(".", "-")


def schema_job_name(spec: HiveCatalogSpec, decision: SchemaDecision) -> str:
    """Deterministic per (catalog, action, versions), so re-reconciling finds the same Job and never starts a
    second one: <catalog>-schema-init-3-1-0, <catalog>-schema-upgrade-2-3-0-to-3-1-0."""
    action = _action(decision)
    if isinstance(action, Init):
        suffix = f"schema-init-{_version_slug(action.to_version)}"
    else:
        suffix = f"schema-upgrade-{_version_slug(action.from_version)}-to-{_version_slug(action.to_version)}"
    # object_name keeps it a DNS label of at most 63 characters, which the Job controller needs:
    # it copies the name into the pods' job-name label. A long catalog name is shortened and hashed.
    return object_name(spec.name, suffix)


def schema_job(spec: HiveCatalogSpec, decision: SchemaDecision) -> dict[str, Any]:
    """A batch/v1 Job. No ttlSecondsAfterFinished: the operator reads the finished Job (and the logs stay
    for the user) until the catalog is deleted and garbage collection takes it."""
    action = _action(decision)
    password = _database(spec).password
    assert password is not None  # _database checked it
    labels = catalog_labels(spec.name, COMPONENT)
    annotations = {"hivecatalog.io/schema-action": action.kind.lower(),
                   "hivecatalog.io/schema-to": action.to_version}
    if isinstance(action, Upgrade):
        annotations["hivecatalog.io/schema-from"] = action.from_version
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.metastore.image,
        "command": schema_command(spec, decision),
        "env": [
            {"name": "HIVE_HOME", "value": spec.metastore.hive_home},
            {"name": "HIVE_CONF_DIR", "value": CONF_DIR},
            {"name": PASSWORD_ENV, "valueFrom": {"secretKeyRef": {"name": password.name, "key": password.key}}},
        ],
        "volumeMounts": [{"name": CONF_VOLUME, "mountPath": CONF_DIR, "readOnly": True}],
    }
    if spec.metastore.image_pull_policy:
        container["imagePullPolicy"] = spec.metastore.image_pull_policy
    if spec.metastore.resources:
        container["resources"] = dict(spec.metastore.resources)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": schema_job_name(spec, decision), "namespace": spec.namespace, "labels": labels,
                     "annotations": annotations},
        "spec": {
            "backoffLimit": BACKOFF_LIMIT,
            "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": CONF_VOLUME, "configMap": {"name": metastore_config_map_name(spec)}}],
                },
            },
        },
    }
