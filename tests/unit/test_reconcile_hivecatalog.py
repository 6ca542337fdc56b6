"""One HiveCatalog reconcile pass (hivecat.act.hivecatalog.Pass) against a recording fake of its
`Ports`: every branch of run(), what it applies and deletes (kinds and names), the conditions it states, the
phase, and that no password reaches any manifest, condition message or Event. Also the conditions merge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hivecat.catalog.connect import CatalogUnavailable
from hivecat.catalog.probes import ProbeResult
from hivecat.catalog.schema_version import SchemaState
from hivecat.reconcile.conditions import Condition, merge
from hivecat.act.hivecatalog import Pass
from hivecat.reconcile.hivecatalog import SHORT_WAIT, Outcome, previous_mode
from hivecat.specs.mode import GLUE_CLIENT_FACTORY
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.specs import HiveCatalogSpec, parse_hive_catalog
from support.catalog_ports import AWS_KEY, AWS_SECRET, PASSWORD, FakePorts

IMAGE = "apache/hive:3.1.3"
FACTORY = {"hive.metastore.client.factory.class": GLUE_CLIENT_FACTORY}
EMPTY = SchemaState(False, None, 0)
BEHIND = SchemaState(True, "2.3.0", 1)
INIT_JOB = "sales-schema-init-3-1-0"
UPGRADE_JOB = "sales-schema-upgrade-2-3-0-to-3-1-0"

DATABASE = {"type": "mariadb", "host": "mariadb.db", "name": "hive_sales", "user": "hive",
            "passwordSecretRef": {"name": "sales-db", "key": "password"}}
GLUE = {"region": "eu-west-1", "credentialsSecretRef": {"name": "aws"},
        "defaultDatabaseLocation": "s3a://lake/warehouse"}


def parse(spec: dict[str, Any], *, name: str = "sales", confirm: bool = False) -> HiveCatalogSpec:
    annotations = {"hivecatalog.io/confirm-mode-switch": "true"} if confirm else {}
    return parse_hive_catalog({"metadata": {"name": name, "namespace": "data", "uid": "u", "generation": 3,
                                            "annotations": annotations}, "spec": spec}, default_image=IMAGE)


def thrift(*, replicas: int = 1, confirm: bool = False, image: str | None = None) -> HiveCatalogSpec:
    metastore: dict[str, Any] = {"replicas": replicas, "warehouseDir": "hdfs://nn:8020/warehouse"}
    if image:
        metastore["image"] = image
    return parse({"metastore": metastore, "database": DATABASE, "glue": GLUE}, confirm=confirm)


def glue(*, hive_site_only: bool = False, confirm: bool = False) -> HiveCatalogSpec:
    classifications = [{"classification": "hive-site", "properties": FACTORY}]
    if not hive_site_only:
        classifications.append({"classification": "spark-hive-site", "properties": FACTORY})
    return parse({"configurations": classifications, "database": DATABASE, "glue": GLUE}, confirm=confirm)


def hybrid() -> HiveCatalogSpec:
    return parse({"configurations": [{"classification": "spark-hive-site", "properties": FACTORY}],
                  "database": DATABASE, "glue": GLUE})


def derby() -> HiveCatalogSpec:
    return parse({"database": {"type": "derby"}})


def run(spec: HiveCatalogSpec, ports: FakePorts, *, previous: str | None = None,
        policy: WorkloadPolicy = WorkloadPolicy(), named_image: str | None = None) -> Outcome:
    outcome = Pass(spec, previous, ports, policy, named_image=named_image).run()
    check_invariants(outcome, ports)
    return outcome


def check_invariants(outcome: Outcome, ports: FakePorts) -> None:
    """Every outcome: Ready exactly once, each type once, and no secret anywhere it could leak."""
    types = [c.type for c in outcome.conditions]
    assert types.count("Ready") == 1, types
    assert len(types) == len(set(types)), types
    assert all(c.status in ("True", "False", "Unknown") for c in outcome.conditions)
    assert all(c.reason and c.reason[0].isupper() and " " not in c.reason for c in outcome.conditions)
    text = json.dumps([ports.applied, [c.message for c in outcome.conditions],
                       [e.message for e in outcome.events]])
    for secret in (PASSWORD, AWS_SECRET, AWS_KEY):
        assert secret not in text
    assert "--" not in " ".join(c.message for c in outcome.conditions)  # words, not CLI flags


def conditions(outcome: Outcome) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in outcome.conditions}


def ready(outcome: Outcome) -> Condition:
    return next(c for c in outcome.conditions if c.type == "Ready")


# --- Glue --------------------------------------------------------------------------------------------------

def test_glue_ready_deploys_nothing_and_publishes_the_client_config() -> None:
    ports = FakePorts()
    outcome = run(glue(), ports)
    assert ports.made() == [("ConfigMap", "sales-client"), ("ConfigMap", "sales")]
    assert set(ports.deleted) == {("Deployment", "sales-metastore"), ("Service", "sales-metastore"),
                                 ("ConfigMap", "sales-metastore-config")}
    assert conditions(outcome) == {"Ready": ("True", "Ready"), "BackendReachable": ("True", "Reachable")}
    assert outcome.phase == "Ready" and outcome.mode == "Glue" and outcome.endpoint == ""
    assert outcome.client_config_map == "sales-client" and outcome.retry_after is None
    assert outcome.events == []  # nothing was there to remove
    assert "probe_sql" not in ports.calls and "read_schema" not in ports.calls
    assert GLUE_CLIENT_FACTORY in ports.applied[0]["data"]["hive-site.xml"]


@pytest.mark.parametrize("secrets, reason", [
    ({}, "SecretNotFound"),
    ({("aws", "AWS_ACCESS_KEY_ID"): AWS_KEY}, "SecretKeyNotFound"),
])
def test_glue_credentials_missing_stop_before_any_call_or_write(secrets: dict, reason: str) -> None:
    ports = FakePorts(secrets=secrets)
    outcome = run(glue(), ports)
    assert ports.applied == [] and ports.deleted == []
    assert "probe_glue" not in ports.calls and "ensure_glue_default" not in ports.calls
    assert conditions(outcome) == {"Ready": ("False", reason)}
    assert outcome.phase == "Invalid"


def test_glue_unreachable_is_reported_and_nothing_written() -> None:
    ports = FakePorts(glue=ProbeResult(False, "GlueUnreachable", f"cannot reach Glue in eu-west-1 ({AWS_SECRET})"))
    outcome = run(glue(), ports)
    assert ports.applied == [] and ports.deleted == []
    assert "ensure_glue_default" not in ports.calls
    assert conditions(outcome) == {"Ready": ("False", "GlueUnreachable"),
                                   "BackendReachable": ("False", "GlueUnreachable")}
    assert outcome.phase == "Degraded"
    assert "***" in ready(outcome).message  # the echoed secret was scrubbed


def test_glue_default_database_without_location_is_reported_not_changed() -> None:
    ports = FakePorts(glue_default=ProbeResult(False, "DefaultDatabaseWithoutLocation",
                                               "the default database has no location"))
    outcome = run(glue(), ports)
    assert ports.applied == [] and ports.deleted == []
    assert conditions(outcome) == {"Ready": ("False", "DefaultDatabaseWithoutLocation"),
                                   "BackendReachable": ("True", "Reachable")}
    assert outcome.phase == "Degraded"


def test_spark_side_completed_gives_a_warning_condition() -> None:
    outcome = run(glue(hive_site_only=True), FakePorts())
    assert conditions(outcome)["Warning"] == ("True", "SparkSideCompleted")
    assert ready(outcome).status == "True"
    assert "Warning" not in conditions(run(glue(), FakePorts()))


# --- Thrift: schema ----------------------------------------------------------------------------------------

def test_empty_database_gets_one_init_job() -> None:
    ports = FakePorts(schema=EMPTY)
    first = run(thrift(), ports)
    assert ports.made() == [("ConfigMap", "sales-metastore-config"), ("Job", INIT_JOB)]
    assert "-initSchema" in ports.applied[1]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert conditions(first) == {"Ready": ("False", "SchemaJobRunning"),
                                 "SchemaReady": ("False", "SchemaJobRunning"),
                                 "BackendReachable": ("Unknown", "MetastoreNotRunning")}
    assert first.phase == "Pending" and first.retry_after == SHORT_WAIT
    assert [e.reason for e in first.events] == ["SchemaJobCreated"]
    second = run(thrift(), ports)  # the Job is there now: no second one
    assert [kind for kind, _ in ports.made()].count("Job") == 1
    assert second.events == [] and conditions(second)["SchemaReady"] == ("False", "SchemaJobRunning")


def test_older_schema_gets_an_upgrade_job_never_an_init() -> None:
    ports = FakePorts(schema=BEHIND)
    outcome = run(thrift(), ports)
    assert ("Job", UPGRADE_JOB) in ports.made()
    command = ports.objects["Job", UPGRADE_JOB]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "-upgradeSchemaFrom" in command and "-initSchema" not in command
    assert outcome.schema_version == "2.3.0"
    assert ("Deployment", "sales-metastore") not in ports.made()


@pytest.mark.parametrize("status", [{"succeeded": 1},
                                    {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}])
def test_job_succeeded_but_version_behind(status: dict) -> None:
    ports = FakePorts(schema=EMPTY)
    ports.objects["Job", INIT_JOB] = {"kind": "Job", "spec": {"backoffLimit": 1}, "status": status}
    outcome = run(thrift(), ports)
    assert ("Job", INIT_JOB) not in ports.made()
    assert conditions(outcome)["SchemaReady"] == ("False", "SchemaJobSucceededButVersionBehind")
    assert ready(outcome).reason == "SchemaJobSucceededButVersionBehind"
    assert ("Deployment", "sales-metastore") not in ports.made()


@pytest.mark.parametrize("status, reason", [
    ({"failed": 2}, "SchemaJobFailed"),
    ({"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]},
     "SchemaJobFailed"),
    ({"failed": 1, "active": 1}, "SchemaJobRunning"),  # its one retry is running
    ({"failed": 1}, "SchemaJobRunning"),  # between the failed pod and the retry's
])
def test_job_failed_or_retrying(status: dict, reason: str) -> None:
    ports = FakePorts(schema=EMPTY)
    ports.objects["Job", INIT_JOB] = {"kind": "Job", "spec": {"backoffLimit": 1}, "status": status}
    outcome = run(thrift(), ports)
    assert conditions(outcome)["SchemaReady"] == ("False", reason)
    assert ready(outcome).reason == reason
    assert ports.made() == [("ConfigMap", "sales-metastore-config")]
    if reason == "SchemaJobFailed":
        assert outcome.retry_after is None and outcome.phase == "Degraded"


@pytest.mark.parametrize("state, reason", [
    (SchemaState(True, "4.0.0", 1), "SchemaNewerThanImage"),
    (SchemaState(True, None, 0), "SchemaWithoutVersion"),
    (SchemaState(True, None, 2), "AmbiguousVersion"),
])
def test_schema_refusals_run_nothing(state: SchemaState, reason: str) -> None:
    ports = FakePorts(schema=state)
    outcome = run(thrift(), ports)
    assert ports.made() == [("ConfigMap", "sales-metastore-config")]  # no Job, no Deployment
    assert conditions(outcome)["SchemaReady"] == ("False", reason)
    assert ready(outcome).reason == reason and outcome.phase == "Invalid" and outcome.retry_after is None


def test_schema_read_failing() -> None:
    ports = FakePorts(schema=CatalogUnavailable("SchemaUnreadable", "cannot read the schema version"))
    outcome = run(thrift(), ports)
    assert conditions(outcome)["SchemaReady"] == ("False", "SchemaUnreadable")
    assert ready(outcome).reason == "SchemaUnreadable" and outcome.phase == "Degraded"
    assert ports.made() == [("ConfigMap", "sales-metastore-config")]


# --- Thrift: refusals before anything is applied -----------------------------------------------------------

def test_database_probe_failing_applies_nothing() -> None:
    ports = FakePorts(sql=ProbeResult(False, "DatabaseUnreachable", f"cannot connect (password {PASSWORD})"))
    outcome = run(thrift(), ports)
    assert ports.applied == [] and "read_schema" not in ports.calls
    assert conditions(outcome) == {"Ready": ("False", "DatabaseUnreachable"),
                                   "BackendReachable": ("False", "DatabaseUnreachable")}
    assert outcome.phase == "Degraded"


@pytest.mark.parametrize("secrets, reason", [({}, "SecretNotFound"), ({("sales-db", "pw"): "x"}, "SecretKeyNotFound")])
def test_database_secret_missing_applies_nothing(secrets: dict, reason: str) -> None:
    ports = FakePorts(secrets=secrets)
    outcome = run(thrift(), ports)
    assert ports.applied == [] and "probe_sql" not in ports.calls
    assert conditions(outcome) == {"Ready": ("False", reason)}


def test_image_not_allowed_applies_nothing() -> None:
    ports = FakePorts()
    spec = thrift(image="evil.example/hive:latest")
    outcome = run(spec, ports, named_image="evil.example/hive:latest",
                  policy=WorkloadPolicy(allowed_images=("apache/hive:*",)))
    assert ports.applied == [] and ports.calls == []
    assert conditions(outcome) == {"Ready": ("False", "ImageNotAllowed")}
    allowed = run(thrift(image="apache/hive:3.1.3"), FakePorts(), named_image="apache/hive:3.1.3",
                  policy=WorkloadPolicy(allowed_images=("apache/hive:*",)))
    assert ready(allowed).status == "True"


# --- Thrift: the metastore ---------------------------------------------------------------------------------

def test_schema_ready_deploys_and_waits_for_a_ready_pod() -> None:
    ports = FakePorts(ready_replicas=0)
    outcome = run(thrift(), ports)
    assert ports.made() == [("ConfigMap", "sales-metastore-config"), ("Service", "sales-metastore"),
                            ("Deployment", "sales-metastore"), ("ConfigMap", "sales-client"), ("ConfigMap", "sales")]
    assert ready(outcome).status == "False" and outcome.retry_after == SHORT_WAIT and outcome.phase == "Pending"
    assert conditions(outcome)["SchemaReady"] == ("True", "SchemaCurrent")
    assert "probe_thrift" not in ports.calls
    deployment = ports.objects["Deployment", "sales-metastore"]
    assert deployment["metadata"]["labels"]["app.kubernetes.io/component"] == "metastore"
    assert deployment["spec"]["template"]["metadata"]["annotations"]["hivecatalog.io/config-hash"]


def test_thrift_ready() -> None:
    ports = FakePorts()
    outcome = run(thrift(), ports)
    assert conditions(outcome) == {"Ready": ("True", "Ready"), "SchemaReady": ("True", "SchemaCurrent"),
                                   "BackendReachable": ("True", "Reachable")}
    assert outcome.phase == "Ready" and outcome.retry_after is None and outcome.mode == "Thrift"
    assert outcome.endpoint == "thrift://sales-metastore.data.svc:9083"
    assert outcome.client_config_map == "sales-client" and outcome.schema_version == "3.1.0"
    assert [e.reason for e in outcome.events] == ["MetastoreCreated"]
    assert outcome.endpoint in ports.objects["ConfigMap", "sales-client"]["data"]["hive-site.xml"]
    assert ports.objects["ConfigMap", "sales"]["data"] == {"MODE": "Thrift", "HIVE": outcome.endpoint}
    again = run(thrift(), ports)
    assert again.events == [] and ready(again).status == "True"  # created once
    assert ports.deleted == []


def test_thrift_probe_failing() -> None:
    ports = FakePorts(thrift=ProbeResult(False, "MetastoreUnreachable", "cannot connect to the metastore"))
    outcome = run(thrift(), ports)
    assert conditions(outcome)["Ready"] == ("False", "MetastoreUnreachable")
    assert conditions(outcome)["BackendReachable"] == ("False", "MetastoreUnreachable")
    assert ("Deployment", "sales-metastore") in ports.made()
    # ready pods that do not answer are an error: the handler's backoff, not a re-check each second
    assert outcome.retry_after is None and outcome.phase == "Degraded"


def test_replicas_zero() -> None:
    ports = FakePorts()
    outcome = run(thrift(replicas=0), ports)
    assert conditions(outcome)["Ready"] == ("False", "ScaledToZero")
    assert conditions(outcome)["BackendReachable"] == ("False", "ScaledToZero")
    assert outcome.phase == "Stopped" and "probe_thrift" not in ports.calls
    assert ports.objects["Deployment", "sales-metastore"]["spec"]["replicas"] == 0


def test_derby_deploys_without_a_job_or_database_access() -> None:
    ports = FakePorts(secrets={})
    outcome = run(derby(), ports)
    assert ports.made() == [("ConfigMap", "sales-metastore-config"), ("Service", "sales-metastore"),
                            ("Deployment", "sales-metastore"), ("ConfigMap", "sales-client"), ("ConfigMap", "sales")]
    assert not {"read_secret", "probe_sql", "read_schema"} & set(ports.calls)
    assert conditions(outcome) == {"Ready": ("True", "Ready"), "SchemaReady": ("Unknown", "EmbeddedDerby"),
                                   "BackendReachable": ("True", "Reachable")}


# --- Hybrid ------------------------------------------------------------------------------------------------

def test_hybrid_runs_both_sides() -> None:
    ports = FakePorts()
    outcome = run(hybrid(), ports)
    assert {"probe_glue", "ensure_glue_default", "probe_sql", "read_schema", "probe_thrift"} <= set(ports.calls)
    assert ("Deployment", "sales-metastore") in ports.made() and ports.deleted == []
    assert conditions(outcome) == {"Ready": ("True", "Ready"), "SchemaReady": ("True", "SchemaCurrent"),
                                   "BackendReachable": ("True", "Reachable")}
    reach = next(c for c in outcome.conditions if c.type == "BackendReachable")
    assert "Glue" in reach.message and "metastore" in reach.message
    client = ports.objects["ConfigMap", "sales-client"]["data"]
    assert outcome.endpoint in client["hive-site.xml"] and GLUE_CLIENT_FACTORY in client["spark-defaults.conf"]


def test_hybrid_reachability_reflects_the_metastore_too() -> None:
    ports = FakePorts(thrift=ProbeResult(False, "MetastoreUnreachable", "the metastore does not answer"))
    outcome = run(hybrid(), ports)
    assert conditions(outcome)["BackendReachable"] == ("False", "MetastoreUnreachable")
    assert ready(outcome).status == "False"


def test_hybrid_refused_database_leaves_glue_unwritten() -> None:
    ports = FakePorts(sql=ProbeResult(False, "AuthenticationFailed", "access denied"))
    outcome = run(hybrid(), ports)
    assert ports.applied == [] and "ensure_glue_default" not in ports.calls
    assert conditions(outcome)["BackendReachable"] == ("False", "AuthenticationFailed")


def test_hybrid_glue_down_deploys_nothing() -> None:
    ports = FakePorts(glue=ProbeResult(False, "GlueAccessDenied", "Glue refused the credentials"))
    outcome = run(hybrid(), ports)
    assert ports.applied == [] and "read_schema" not in ports.calls
    assert conditions(outcome) == {"Ready": ("False", "GlueAccessDenied"),
                                   "BackendReachable": ("False", "GlueAccessDenied")}


# --- mode switches -----------------------------------------------------------------------------------------

def test_unconfirmed_switch_changes_nothing() -> None:
    ports = FakePorts()
    outcome = run(glue(), ports, previous="Thrift")
    assert ports.applied == [] and ports.deleted == [] and ports.calls == []
    assert outcome.mode == "Thrift"
    assert conditions(outcome) == {"Ready": ("False", "ModeSwitchNotConfirmed")}
    assert "hivecatalog.io/confirm-mode-switch" in ready(outcome).message


def test_confirmed_switch_thrift_to_glue_removes_the_metastore_not_its_database() -> None:
    ports = FakePorts()
    run(thrift(), ports)
    outcome = run(glue(confirm=True), ports, previous="Thrift")
    assert set(ports.deleted) == {("Deployment", "sales-metastore"), ("Service", "sales-metastore"),
                                 ("ConfigMap", "sales-metastore-config")}
    assert [e.reason for e in outcome.events] == ["ModeSwitched", "MetastoreRemoved"]
    assert outcome.mode == "Glue" and outcome.phase == "Ready" and outcome.endpoint == ""
    assert "SchemaReady" not in conditions(outcome)  # no longer applies: dropped by the merge
    assert "probe_sql" not in ports.calls[ports.calls.index("probe_glue"):]


def test_a_glue_catalog_that_was_glue_makes_no_delete_calls() -> None:
    ports = FakePorts()
    outcome = run(glue(), ports, previous="Glue")
    assert ports.deleted == [] and "delete" not in ports.calls
    assert outcome.phase == "Ready" and outcome.events == []


def test_confirmed_switch_failing_its_checks_keeps_the_old_mode() -> None:
    ports = FakePorts(glue=ProbeResult(False, "GlueUnreachable", "cannot reach Glue"))
    outcome = run(glue(confirm=True), ports, previous="Thrift")
    assert outcome.mode == "Thrift" and ports.deleted == [] and outcome.events == []


def test_confirmed_switch_glue_to_thrift_creates_the_metastore() -> None:
    ports = FakePorts(schema=EMPTY)
    outcome = run(thrift(confirm=True), ports, previous="Glue")
    assert outcome.mode == "Thrift"
    assert [e.reason for e in outcome.events] == ["ModeSwitched", "SchemaJobCreated"]
    assert ("Job", INIT_JOB) in ports.made()


def test_previous_mode_reads_status() -> None:
    assert previous_mode(None) is None and previous_mode({}) is None and previous_mode({"mode": ""}) is None
    assert previous_mode({"mode": "Glue"}) == "Glue"


def test_outcome_stop_replaces_ready() -> None:
    outcome = Outcome().stop("A", "a").stop("B", "b")
    assert [(c.type, c.reason) for c in outcome.conditions] == [("Ready", "B")]
    assert outcome.phase == "Invalid"


# --- conditions merge --------------------------------------------------------------------------------------

def test_merge_keeps_the_transition_time_while_status_holds() -> None:
    first = merge(None, [Condition.of("Ready", False, "Starting", "x")], generation=1, now="2026-01-01T00:00:00Z")
    assert first == [{"type": "Ready", "status": "False", "reason": "Starting", "message": "x",
                      "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}]
    held = merge(first, [Condition.of("Ready", False, "Other", "y")], generation=2, now="2026-01-02T00:00:00Z")
    assert held[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert (held[0]["reason"], held[0]["message"], held[0]["observedGeneration"]) == ("Other", "y", 2)
    moved = merge(held, [Condition.of("Ready", True, "Ready")], generation=2, now="2026-01-03T00:00:00Z")
    assert moved[0]["lastTransitionTime"] == "2026-01-03T00:00:00Z"


def test_merge_drops_conditions_no_longer_stated_and_duplicates() -> None:
    before = merge(None, [Condition.of("Ready", True, "Ready"), Condition.of("SchemaReady", True, "SchemaCurrent")],
                   generation=1, now="2026-01-01T00:00:00Z")
    after = merge(before, [Condition.of("Ready", True, "Ready")], generation=1, now="2026-01-02T00:00:00Z")
    assert [c["type"] for c in after] == ["Ready"]
    twice = merge(None, [Condition.of("Ready", False, "A"), Condition.of("Ready", True, "B")], generation=1,
                  now="2026-01-01T00:00:00Z")
    assert [(c["type"], c["reason"]) for c in twice] == [("Ready", "B")]
