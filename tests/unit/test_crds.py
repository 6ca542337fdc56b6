"""Offline checks of the CRDs in crds/, the manifests in examples/ and the chart: what the API server does
not check itself (project conventions, documentation, printer columns pointing at real fields, the chart's
CRD copies, the chart rendering). Admission of resources (schemas, defaults, CEL rules, every bad CR)
is checked by the real API server in tests/operator/test_admission.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import crds

REPO = crds.REPO
EXAMPLES = sorted(p for p in (REPO / "examples").glob("*.yaml") if p.name != "kustomization.yaml")
CHART_CRD_DIR = REPO / "charts" / "hivecat" / "crds"
PACKAGE_CRD_DIR = REPO / "operator" / "hivecat" / "specs" / "crds"
CRDS = crds.load_crds()
KINDS = sorted(CRDS)
# The kinds a team writes in its namespace (a CatalogPolicy is the cluster administrator's: no suspend).
NAMESPACED_KINDS = [kind for kind in KINDS if CRDS[kind]["spec"]["scope"] == "Namespaced"]


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def single_doc(path: Path) -> dict[str, Any]:
    docs = crds.load_docs(path)
    assert len(docs) == 1, f"{path.name}: one resource per file, found {len(docs)}"
    return docs[0]


# (a) The CRDs follow the project's conventions (the API server checks that they are valid and structural).


@pytest.mark.parametrize("kind", KINDS)
def test_crd_conventions(kind: str) -> None:
    from hivecat import kinds

    [known] = [k for k in kinds.KINDS if k.kind == kind]
    spec = CRDS[kind]["spec"]
    names = spec["names"]
    assert CRDS[kind]["metadata"]["name"] == f"{names['plural']}.{crds.GROUP}"
    assert spec["group"] == crds.GROUP and spec["scope"] == ("Namespaced" if known.namespaced else "Cluster")
    assert names["plural"] == known.plural and names["singular"] == kind.lower()
    assert names["listKind"] == f"{kind}List" and names["categories"] == ["hivecat"]
    assert names["shortNames"] == ["".join(c for c in kind if c.isupper()).lower()]
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (crds.VERSION, True, True)
    assert version["subresources"] == {"status": {}}


# (b) Every field is documented, CEL inputs are bounded, every kind has suspend and a status shape.


@pytest.mark.parametrize("kind", KINDS)
def test_spec_and_status_fields_are_documented(kind: str) -> None:
    schema = crds.openapi_schema(CRDS[kind])
    missing = [
        path
        for top in ("spec", "status")
        for path, node in crds.walk(schema["properties"][top], f".{top}")
        if not re.search(r"\[\*\]$|\{\*\}$|<", path) and not node.get("description")
    ]
    assert missing == []


@pytest.mark.parametrize("kind", KINDS)
def test_cel_inputs_are_bounded(kind: str) -> None:
    """The apiserver rejects rules whose estimated cost is too high; strings, lists
    and maps under a node with rules need maxLength/maxItems/maxProperties."""
    unbounded = []
    for root, node in crds.walk(crds.openapi_schema(CRDS[kind])):
        if "x-kubernetes-validations" not in node:
            continue
        for path, sub in crds.walk(node, root):
            if "<" in path:
                continue  # anyOf branches of int-or-string: the node itself is bounded
            typ = sub.get("type")
            if typ == "string" and not ({"maxLength", "enum", "format"} & set(sub)):
                unbounded.append(path)
            if typ == "array" and "maxItems" not in sub:
                unbounded.append(path)
            if typ == "object" and "additionalProperties" in sub and "maxProperties" not in sub:
                unbounded.append(path)
    assert unbounded == []


@pytest.mark.parametrize("kind", KINDS)
def test_spec_suspend_and_status_shape(kind: str) -> None:
    props = crds.openapi_schema(CRDS[kind])["properties"]
    if kind in NAMESPACED_KINDS:
        suspend = props["spec"]["properties"]["suspend"]
        assert (suspend["type"], suspend["default"]) == ("boolean", False)
    status = props["status"]
    assert status["x-kubernetes-preserve-unknown-fields"] is True  # kopf writes there
    fields = status["properties"]
    assert fields["observedGeneration"]["format"] == "int64"
    assert fields["phase"]["type"] == "string"
    conditions = fields["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]["properties"]
    assert item["status"]["enum"] == ["True", "False", "Unknown"]
    assert item["lastTransitionTime"]["format"] == "date-time"
    assert {"type", "reason", "message", "observedGeneration"} <= set(item)


# (c) The examples cover every kind and mode (tests/operator applies them to the API server).


def test_examples_show_every_kind_and_mode() -> None:
    docs = [single_doc(p) for p in EXAMPLES]
    assert {d["kind"] for d in docs} >= set(KINDS) | {"Secret"}  # CatalogPolicy too: the examples' grants
    catalogs = [d["spec"] for d in docs if d["kind"] == "HiveCatalog"]
    assert {c["database"]["type"] for c in catalogs if "database" in c} >= {"mariadb", "postgresql", "derby"}
    assert any("glue" in c and "database" not in c for c in catalogs)  # Glue
    assert any("glue" in c and "database" in c for c in catalogs)  # Hybrid
    schemes = {d["spec"]["filesystem"].split("://")[0] for d in docs if d["kind"] == "ClusterStorage"}
    assert schemes >= {"hdfs", "s3", "file"}
    kustomization = single_doc(REPO / "examples" / "kustomization.yaml")
    assert sorted(kustomization["resources"]) == sorted(p.name for p in EXAMPLES)  # a GitOps repo gets them all


# (d) Printer columns show fields that exist.

_METADATA_FIELDS = {"name", "namespace", "creationTimestamp", "labels", "annotations", "generation"}
_TOKEN = re.compile(r'\.(?P<field>[A-Za-z0-9_-]+)|\[\?\(@\.(?P<filter>[A-Za-z0-9_]+)==[^)]*\)\]')
_COLUMN_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
                 "date": "string"}


def resolve(schema: crds.Schema, json_path: str) -> crds.Schema | None:
    """Schema node a printer column's jsonPath points at, None when it doesn't exist."""
    tokens = list(_TOKEN.finditer(json_path))
    if "".join(t.group(0) for t in tokens) != json_path:
        return None  # unsupported syntax
    if tokens and tokens[0]["field"] == "metadata":
        ok = len(tokens) == 2 and tokens[1]["field"] in _METADATA_FIELDS
        return {"type": "string"} if ok else None
    node: crds.Schema | None = schema
    for token in tokens:
        if node is None:
            return None
        if token["field"]:
            node = node.get("properties", {}).get(token["field"])
        elif node.get("type") == "array" and token["filter"] in node["items"].get("properties", {}):
            node = node["items"]
        else:
            return None
    return node


PRINTER_COLUMNS = {
    "HiveCatalog": ["Mode", "Phase", "Ready", "Endpoint", "Age"],
    "ClusterStorage": ["Filesystem", "Catalog", "Repair", "Drifted", "Phase", "Age"],
    "TableReplica": ["Database", "Table", "Active", "In-Sync", "Lag", "Phase", "Age"],
    "CatalogPolicy": ["Phase", "Age"],
}


@pytest.mark.parametrize("kind", KINDS)
def test_printer_columns_point_at_schema_fields(kind: str) -> None:
    schema = crds.openapi_schema(CRDS[kind])
    columns = crds.storage_version(CRDS[kind])["additionalPrinterColumns"]
    for column in columns:
        node = resolve(schema, column["jsonPath"])
        assert node is not None, f"{column['name']}: {column['jsonPath']} is not in the schema"
        assert node.get("type") == _COLUMN_TYPES[column["type"]], column["name"]
    assert [c["name"] for c in columns] == PRINTER_COLUMNS[kind]


def test_resolve_rejects_missing_fields() -> None:
    schema = crds.openapi_schema(CRDS["HiveCatalog"])
    assert resolve(schema, '.status.conditions[?(@.type=="Ready")].status') is not None
    assert resolve(schema, '.status.conditions[?(@.kind=="Ready")].status') is None
    assert resolve(schema, ".status.endpont") is None


# (e) The chart ships the same CRDs, and so does the package (the spec parsers read their schemas).

COPIES = (CHART_CRD_DIR, PACKAGE_CRD_DIR)


@pytest.mark.parametrize("copies", COPIES, ids=("chart", "package"))
@pytest.mark.parametrize("path", crds.crd_files(), ids=_ids(crds.crd_files()))
def test_crd_copies_match(path: Path, copies: Path) -> None:
    copy = copies / path.name
    assert copy.exists(), f"{copy} missing: run charts/sync-crds.sh"
    assert copy.read_bytes() == path.read_bytes(), f"{copy} differs: run charts/sync-crds.sh"


@pytest.mark.parametrize("copies", COPIES, ids=("chart", "package"))
def test_no_extra_crd_copies(copies: Path) -> None:
    assert _ids(sorted(copies.glob("*"))) == _ids(crds.crd_files())


# (f) The chart renders with the real helm (tests/operator installs it on the control plane).

CHART = REPO / "charts" / "hivecat"
HELM = REPO / "tools" / "bin" / "helm"


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    assert HELM.exists(), f"helm is not installed at {HELM}: run `make setup`"
    return subprocess.run([str(HELM), *args], capture_output=True, text=True, timeout=60)


def test_chart_lints() -> None:
    done = helm("lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("values,namespaces", [
    ([], ["hivecat-system"]),  # default: the release's own namespace only
    (["--set", "watchNamespaces={data,analytics}"], ["analytics", "data"]),
    (["--set", "clusterWide=true"], None),  # an explicit choice: every namespace
], ids=["default", "two-namespaces", "cluster-wide"])
def test_chart_renders_rbac_for_its_scope(values: list[str], namespaces: list[str] | None) -> None:
    done = helm("template", "hivecat", str(CHART), "--namespace", "hivecat-system", *values)
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    roles = sorted((d["kind"], d["metadata"]["namespace"]) for d in docs if d["kind"] in {"Role", "RoleBinding"}
                   and not d["metadata"]["name"].endswith("-leader"))
    assert roles == sorted((k, ns) for ns in namespaces or [] for k in ("Role", "RoleBinding"))
    # The leader Lease, in the release's namespace whatever the scope: created, then only read and renewed.
    [leader] = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "hivecat-leader"]
    assert leader["metadata"]["namespace"] == "hivecat-system"
    assert leader["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["hivecat-leader"],
         "verbs": ["get", "update"]}]
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert sorted(a for a in args if a.startswith("--namespace=") or a == "--all-namespaces") == (
        ["--namespace=!kube-system"] if namespaces is None else [f"--namespace={ns}" for ns in sorted(namespaces)])
    rules = [rule for d in docs if d["kind"] in {"Role", "ClusterRole"} and d is not leader for rule in d["rules"]]
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    assert ("serviceaccounts", "create") not in granted  # no feature creates service accounts
    assert {("secrets", "list"), ("secrets", "watch")}.isdisjoint(granted)  # Secrets are read one by one
    [cluster_role] = [d for d in docs if d["kind"] == "ClusterRole"]
    cluster_wide = {r for rule in cluster_role["rules"] for r in rule["resources"]}
    assert ("secrets" in cluster_wide) == (namespaces is None)
    # The administrator's policies are read in every mode; namespaces are listed only to find them (clusterWide).
    everywhere = {(r, v) for rule in cluster_role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert {("catalogpolicies", "watch"), ("catalogpolicies/status", "patch"), ("namespaces", "get")} <= everywhere
    assert (("namespaces", "list") in everywhere) == (namespaces is None)
    assert (("customresourcedefinitions", "list") in everywhere) == (namespaces is None)


@pytest.mark.parametrize("values,message", [
    (["--set", "watchNamespaces={data,kube-system}"], "does not watch kube-system"),
    (["--set", "clusterWide=true", "--set", "watchNamespaces={data}"], "either clusterWide or watchNamespaces"),
])
def test_chart_refuses_scopes_it_must_not_have(values: list[str], message: str) -> None:
    done = helm("template", "hivecat", str(CHART), "--namespace", "hivecat-system", *values)
    assert done.returncode != 0 and message in done.stderr


def test_chart_passes_the_allow_lists_to_the_operator() -> None:
    done = helm("template", "hivecat", str(CHART), "--set", "allowedImages={registry.example.com/data/*,a/b:1}",
                "--set", "allowedServiceAccounts={spark}")
    assert done.returncode == 0, done.stderr
    [deployment] = [d for d in yaml.safe_load_all(done.stdout) if d and d["kind"] == "Deployment"]
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["HIVECAT_ALLOWED_IMAGES"] == "registry.example.com/data/*,a/b:1"
    assert env["HIVECAT_ALLOWED_SERVICE_ACCOUNTS"] == "spark"


@pytest.mark.parametrize("value, message", [
    ("metrics.port=abc", "/metrics/port': got string, want integer"),
    ("clusterWide=yes", "/clusterWide': got string, want boolean"),
    ("podSecurityContext.runAsUser=root", "/podSecurityContext/runAsUser': got string, want integer"),
    ("logLevel=loud", "at '/logLevel': value must be one of 'info', 'debug', 'verbose', 'quiet'"),
    ("watchNamespaces={Bad_Name}", "/watchNamespaces/0'"),
    ("nosuch=1", "additional properties 'nosuch' not allowed"),
])
def test_values_of_the_wrong_type_are_refused_by_the_schema(value: str, message: str) -> None:
    for command in (("template", "hivecat", str(CHART)), ("lint", "--strict", str(CHART))):
        done = helm(*command, "--set", value)
        assert done.returncode != 0 and message in done.stdout + done.stderr, (command, done.stdout, done.stderr)


def test_chart_serves_metrics_with_a_service_and_an_optional_service_monitor() -> None:
    def render(*values: str) -> list[dict]:
        done = helm("template", "hivecat", str(CHART), "--namespace", "hivecat-system", *values)
        assert done.returncode == 0, done.stderr
        return [d for d in yaml.safe_load_all(done.stdout) if d]

    docs = render()
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HIVECAT_METRICS_PORT"] == "9102"
    assert {"name": "metrics", "containerPort": 9102, "protocol": "TCP"} in container["ports"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (10001, 10001)
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {"sizeLimit": "2Gi"}},
                              {"name": "keytabs", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}]
    [service] = [d for d in docs if d["kind"] == "Service"]
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert not [d for d in docs if d["kind"] == "ServiceMonitor"]
    [monitor] = [d for d in render("--set", "metrics.serviceMonitor.enabled=true") if d["kind"] == "ServiceMonitor"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    off = render("--set", "metrics.port=0")
    assert not [d for d in off if d["kind"] == "Service"]
    assert "HIVECAT_METRICS_PORT" not in {e["name"] for d in off if d["kind"] == "Deployment"
                                         for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_chart_gives_the_operator_the_administrators_realms_and_keeps_keytabs_in_memory() -> None:
    krb5 = "[libdefaults]\n default_realm = CORP.EXAMPLE.COM\n"
    done = helm("template", "hivecat", str(CHART), "--namespace", "hivecat-system",
                "--set-string", f"kerberos.krb5Conf={krb5}", "--set-string", "webhdfs.caBundle=PEM")
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    [config_map] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-kerberos")]
    assert config_map["data"] == {"krb5.conf": krb5, "webhdfs-ca.pem": "PEM"}
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["KRB5_CONFIG"] == "/etc/hivecat/kerberos/krb5.conf"
    assert env["HIVECAT_WEBHDFS_CA_BUNDLE"] == "/etc/hivecat/kerberos/webhdfs-ca.pem"
    assert env["KRB5CCNAME"].startswith("MEMORY:") and env["HIVECAT_KEYTAB_DIR"] == "/var/run/hivecat/keytabs"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["keytabs"] == "/var/run/hivecat/keytabs" and mounts["kerberos"] == "/etc/hivecat/kerberos"


def test_the_chart_readme_describes_every_value() -> None:
    readme = (CHART / "README.md").read_text()
    values = single_doc(CHART / "values.yaml")
    opaque = {"resources", "podSecurityContext", "securityContext"}  # Kubernetes objects, described whole

    def leaves(node: dict, prefix: str = "") -> list[str]:
        found = []
        for key, value in node.items():
            path = f"{prefix}{key}"
            found += leaves(value, path + ".") if isinstance(value, dict) and value and path not in opaque else [path]
        return found

    missing = [path for path in leaves(values) if f"| `{path}` |" not in readme]
    assert not missing, f"charts/hivecat/README.md does not describe {missing}"


def test_chart_metadata_and_values() -> None:
    chart = single_doc(CHART / "Chart.yaml")
    assert (chart["apiVersion"], chart["name"], chart["appVersion"]) == ("v2", "hivecat", "0.1.0")
    values = single_doc(CHART / "values.yaml")
    assert {"image", "watchNamespaces", "clusterWide", "allowedImages", "allowedServiceAccounts", "resources",
            "serviceAccount", "rbac", "logLevel",
            "nodeSelector", "tolerations", "affinity"} <= set(values)
    assert {"repository", "tag", "pullPolicy"} <= set(values["image"])


def test_kinds_module_names_every_crd() -> None:
    """hivecat.kinds is the one place the code names kinds and plurals: it must match crds/."""
    from hivecat import kinds

    assert {(k.kind, k.plural, k.crd_name) for k in kinds.KINDS} == {
        (kind, crd["spec"]["names"]["plural"], crd["metadata"]["name"]) for kind, crd in CRDS.items()}
