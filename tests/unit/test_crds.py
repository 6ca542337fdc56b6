"""Checks of the CRDs in crds/, the manifests in examples/ and the chart's CRD copies.

Two layers stand in for the apiserver's admission of a custom resource:
check-jsonschema for the OpenAPI schema (with unknown fields rejected, as with
kubectl's strict field validation) and support.cel for the x-kubernetes-validations.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from support import cel, crds, structural

# Oldest Kubernetes hivecat supports (the chart's kubeVersion):
# CRD CEL validation rules are GA since 1.29.
K8S_VERSION = "1.29.0"

REPO = crds.REPO
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
BAD_CRS = sorted((Path(__file__).parent / "bad_crs").glob("*.yaml"))
CHART_CRD_DIR = REPO / "charts" / "hivecat" / "crds"
CRDS = crds.load_crds()
KINDS = sorted(CRDS)
EXPECT = re.compile(r"^# expect: (schema|cel: (?P<message>.+))$")


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def _check_jsonschema_bin() -> str:
    local = Path(sys.executable).parent / "check-jsonschema"
    found = str(local) if local.exists() else shutil.which("check-jsonschema")
    assert found, "check-jsonschema is not installed"
    return found


@pytest.fixture(scope="session")
def schema_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Kind -> JSON Schema file for check-jsonschema."""
    out = tmp_path_factory.mktemp("schemas")
    files = {}
    for kind, crd in CRDS.items():
        files[kind] = out / f"{kind}.json"
        files[kind].write_text(json.dumps(crds.json_schema(crd), indent=1))
    return files


def check_jsonschema(schema_file: Path, instance: Path, tmp_dir: Path) -> tuple[bool, str]:
    """Validate with the check-jsonschema CLI. The file is handed over as JSON parsed
    by PyYAML, which reads YAML 1.1 like kubectl does (a bare Off is false there,
    but a string for check-jsonschema's YAML 1.2 parser)."""
    as_json = tmp_dir / (instance.stem + ".json")
    as_json.write_text(json.dumps(single_doc(instance)))
    run = subprocess.run(
        [_check_jsonschema_bin(), "--schemafile", str(schema_file), str(as_json)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return run.returncode == 0, run.stdout + run.stderr


def single_doc(path: Path) -> dict[str, Any]:
    docs = crds.load_docs(path)
    assert len(docs) == 1, f"{path.name}: one resource per file, found {len(docs)}"
    return docs[0]


# (a) The CRD manifests are valid CustomResourceDefinitions.


@pytest.mark.parametrize("path", crds.crd_files(), ids=_ids(crds.crd_files()))
def test_crd_file_is_a_valid_customresourcedefinition(path: Path) -> None:
    doc = single_doc(path)
    assert doc["kind"] == "CustomResourceDefinition"
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{path.name}: {exc.message}")


@pytest.mark.parametrize("kind", KINDS)
def test_crd_conventions(kind: str) -> None:
    spec = CRDS[kind]["spec"]
    names = spec["names"]
    assert CRDS[kind]["metadata"]["name"] == f"{names['plural']}.{crds.GROUP}"
    assert spec["group"] == crds.GROUP and spec["scope"] == "Namespaced"
    assert names["plural"] == kind.lower() + "s" and names["singular"] == kind.lower()
    assert names["listKind"] == f"{kind}List" and names["categories"] == ["hivecat"]
    assert names["shortNames"] == ["".join(c for c in kind if c.isupper()).lower()]
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (crds.VERSION, True, True)
    assert version["subresources"] == {"status": {}}


# (b) The schemas are structural and follow the project's conventions.


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_structural(kind: str) -> None:
    assert structural.structural_errors(crds.openapi_schema(CRDS[kind])) == []


def test_structural_checker_catches_violations() -> None:
    bad = {
        "type": "object",
        "properties": {
            "a": {"properties": {"x": {"type": "string"}}},  # no type
            "b": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
            "c": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                  "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "d": {"type": "integer", "default": "nine"},
            "e": {"type": "string", "anyOf": [{"type": "string", "description": "x"}]},
        },
    }
    errors = "\n".join(structural.structural_errors(bad))
    for expected in (".a: missing type", ".b: properties and additionalProperties",
                     ".c: list-map key k", ".d: default", ".e: anyOf must not set"):
        assert expected in errors


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


@pytest.mark.parametrize("kind", KINDS)
def test_cel_rules_compile(kind: str) -> None:
    for rule in cel.rules(crds.openapi_schema(CRDS[kind])):
        cel.compile_rule(rule.rule)


# (c) The examples are valid.


@pytest.mark.parametrize("path", EXAMPLES, ids=_ids(EXAMPLES))
def test_example_is_valid(path: Path, schema_files: dict[str, Path], tmp_path: Path) -> None:
    doc = single_doc(path)
    assert "namespace" not in doc["metadata"], "examples are applied to a namespace of the user's choice"
    if doc["kind"] not in CRDS:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        return
    ok, output = check_jsonschema(schema_files[doc["kind"]], path, tmp_path)
    assert ok, output
    failures = cel.evaluate(crds.openapi_schema(CRDS[doc["kind"]]), doc)
    assert [str(f) for f in failures] == []


def test_examples_show_every_kind_and_mode() -> None:
    docs = [single_doc(p) for p in EXAMPLES]
    assert {d["kind"] for d in docs} >= set(KINDS) | {"Secret"}
    catalogs = [d["spec"] for d in docs if d["kind"] == "HiveCatalog"]
    assert {c["database"]["type"] for c in catalogs if "database" in c} >= {"mariadb", "postgresql", "derby"}
    assert any("glue" in c and "database" not in c for c in catalogs)  # Glue
    assert any("glue" in c and "database" in c for c in catalogs)  # Hybrid
    schemes = {d["spec"]["filesystem"].split("://")[0] for d in docs if d["kind"] == "ClusterStorage"}
    assert schemes >= {"hdfs", "s3", "file"}


# (d) Every bad CR is rejected, for the reason it states and by that layer alone.


def expectation(path: Path) -> str | None:
    """None for `# expect: schema`, else the expected CEL message substring."""
    match = EXPECT.match(path.read_text().splitlines()[0])
    assert match, f"{path.name}: first line must be '# expect: schema' or '# expect: cel: <message>'"
    return match["message"]


def test_there_are_enough_bad_crs() -> None:
    assert len(BAD_CRS) >= 15
    assert sum(expectation(p) is None for p in BAD_CRS) >= 5


@pytest.mark.parametrize("path", BAD_CRS, ids=_ids(BAD_CRS))
def test_bad_cr_is_rejected(path: Path, schema_files: dict[str, Path], tmp_path: Path) -> None:
    expected = expectation(path)
    doc = single_doc(path)
    schema_ok, output = check_jsonschema(schema_files[doc["kind"]], path, tmp_path)
    failures = cel.evaluate(crds.openapi_schema(CRDS[doc["kind"]]), doc)
    assert all(f.error is None for f in failures), [str(f) for f in failures]
    if expected is None:
        assert not schema_ok, "the schema accepts it"
        assert failures == [], f"CEL rejects it too: {[str(f) for f in failures]}"
    else:
        assert schema_ok, f"the schema rejects it too:\n{output}"
        assert [f.rule.message for f in failures if expected in f.rule.message], \
            f"no CEL failure mentions {expected!r}: {[str(f) for f in failures]}"
        assert len(failures) == 1, f"more than one CEL rule fails: {[str(f) for f in failures]}"


# (e) Every CEL rule is exercised by a bad CR.


def test_every_cel_rule_rejects_some_bad_cr() -> None:
    all_rules = {(kind, r) for kind in KINDS for r in cel.rules(crds.openapi_schema(CRDS[kind]))}
    hit = set()
    for path in BAD_CRS:
        doc = single_doc(path)
        hit |= {(doc["kind"], f.rule) for f in cel.evaluate(crds.openapi_schema(CRDS[doc["kind"]]), doc)}
    assert sorted(f"{k} {r.schema_path}: {r.message}" for k, r in all_rules - hit) == []


def test_cel_evaluator_defaults_and_skips_transition_rules() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.n == 1", "message": "n must default to 1"},
            {"rule": "self.n == oldSelf.n", "message": "transition rule"},
        ],
        "properties": {"n": {"type": "integer", "default": 1}, "m": {"type": "object", "properties": {
            "k": {"type": "integer", "default": 2}}, "x-kubernetes-validations": [
                {"rule": "self.k == 3", "message": "k must be 3"}]}},
    }
    assert cel.evaluate(schema, {}) == []  # m is absent: its rule does not run
    assert [f.rule.message for f in cel.evaluate(schema, {"m": {}})] == ["k must be 3"]
    assert [f.rule.message for f in cel.evaluate(schema, {"n": 2})] == ["n must default to 1"]


# (f) Printer columns show fields that exist.

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
    "HiveCatalog": ["Mode", "Phase", "Ready", "Age"],
    "ClusterStorage": ["Filesystem", "Catalog", "Repair", "Drifted", "Phase", "Age"],
    "TableReplica": ["Database", "Table", "Active", "In-Sync", "Lag", "Phase", "Age"],
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


# (g) The chart ships the same CRDs.


@pytest.mark.parametrize("path", crds.crd_files(), ids=_ids(crds.crd_files()))
def test_chart_crd_matches(path: Path) -> None:
    copy = CHART_CRD_DIR / path.name
    assert copy.exists(), f"{copy} missing: run charts/sync-crds.sh"
    assert copy.read_bytes() == path.read_bytes(), f"{copy} differs: run charts/sync-crds.sh"


def test_chart_has_no_extra_crds() -> None:
    assert _ids(sorted(CHART_CRD_DIR.glob("*"))) == _ids(crds.crd_files())


# The chart around those CRDs (Helm is not available here to render it).

CHART = REPO / "charts" / "hivecat"
_ACTION = re.compile(r"{{-?\s*(/\*.*?\*/|.*?)\s*-?}}", re.S)


def template_block_errors(text: str) -> list[str]:
    """Unbalanced if/range/with/define blocks and stray else/end in a Go template."""
    stack: list[str] = []
    errors = []
    if text.count("{{") != len(_ACTION.findall(text)):
        errors.append("unterminated action")
    for action in _ACTION.findall(text):
        word = action.split()[0] if action.split() else ""
        if word in {"if", "range", "with", "define", "block"}:
            stack.append(word)
        elif word == "else" and (not stack or stack[-1] not in {"if", "range", "with"}):
            errors.append("else outside if/range/with")
        elif word == "end" and not stack:
            errors.append("end without a block")
        elif word == "end":
            stack.pop()
    return errors + [f"unclosed {word}" for word in stack]


def test_template_block_checker() -> None:
    assert template_block_errors("{{ if .a }}x{{ else }}y{{ end }}") == []
    assert template_block_errors("{{- range .a }}x") == ["unclosed range"]
    assert template_block_errors("{{ end }}{{ if x") == ["unterminated action", "end without a block"]


@pytest.mark.parametrize("path", sorted((CHART / "templates").iterdir()), ids=lambda p: p.name)
def test_chart_template_blocks_are_balanced(path: Path) -> None:
    assert template_block_errors(path.read_text()) == []


def test_chart_metadata_and_values() -> None:
    chart = single_doc(CHART / "Chart.yaml")
    assert (chart["apiVersion"], chart["name"], chart["appVersion"]) == ("v2", "hivecat", "0.1.0")
    values = single_doc(CHART / "values.yaml")
    assert {"image", "watchNamespaces", "resources", "serviceAccount", "rbac", "logLevel",
            "nodeSelector", "tolerations", "affinity"} <= set(values)
    assert {"repository", "tag", "pullPolicy"} <= set(values["image"])


def test_chart_rbac_covers_what_the_operator_uses() -> None:
    templates = CHART / "templates"
    rbac = (templates / "rbac.yaml").read_text() + (templates / "_helpers.tpl").read_text()
    for resource in ("hivecatalogs", "clusterstorages", "tablereplicas", "hivecatalogs/status",
                     "clusterstorages/status", "tablereplicas/status", "events", "configmaps",
                     "secrets", "services", "deployments", "jobs", "leases", "customresourcedefinitions"):
        assert re.search(rf"resources: \[[^\]]*\b{re.escape(resource)}\b", rbac), resource
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    for flag in ("--standalone", "--all-namespaces", "--namespace="):
        assert flag in deployment
