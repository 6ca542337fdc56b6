"""The API server, not the tests, is the judge of hivecat's CRDs: every example applies cleanly (with the
schema defaults filled in by the server), and every bad CR in bad_crs/ is rejected by `kubectl apply`
with the server's own message, for the reason its first line states, and nothing is created."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kube.clients import Client
from support import crds

from conftest import CRD_DIR, EXAMPLES_DIR

BAD_CRS = sorted((Path(__file__).parent / "bad_crs").glob("*.yaml"))
EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.yaml") if p.name != "kustomization.yaml")
EXPECT = re.compile(r"^# expect: (schema|cel: (?P<message>.+))$")
CRDS = crds.load_crds(CRD_DIR)
PLURALS = {kind: crd["spec"]["names"]["plural"] for kind, crd in CRDS.items()}
NAMESPACED = [kind for kind, crd in CRDS.items() if crd["spec"]["scope"] == "Namespaced"]
# What the API server says when a field fails the OpenAPI schema (never a CEL rule's message).
SCHEMA_REJECTIONS = ("Unsupported value", "Required value", "Invalid value", "unknown field",
                     "should be", "must be", "no matches for kind", "in body")


def expectation(path: Path) -> str | None:
    """None for `# expect: schema`, else the expected CEL message."""
    match = EXPECT.match(path.read_text().splitlines()[0])
    assert match, f"{path.name}: first line must be '# expect: schema' or '# expect: cel: <message>'"
    return match["message"]


def rejection(kubectl: Client, namespace: str, path: Path) -> str:
    """kubectl apply's error for `path`, after checking that the object was not created."""
    done = kubectl("apply", "-n", namespace, "-f", str(path), check=False)
    assert done.returncode != 0, f"{path.name} was accepted:\n{done.stdout}"
    doc = yaml.safe_load(path.read_text())
    plural = PLURALS.get(doc["kind"], doc["kind"].lower())
    left = kubectl("get", "-n", namespace, plural, doc["metadata"]["name"], "-o", "name", check=False).stdout.strip()
    assert left == "", f"{path.name}: rejected, yet {left} exists"
    return done.stderr


def test_there_are_enough_bad_crs() -> None:
    assert len(BAD_CRS) >= 15
    assert sum(expectation(p) is None for p in BAD_CRS) >= 5


@pytest.mark.parametrize("path", BAD_CRS, ids=[p.name for p in BAD_CRS])
def test_api_server_rejects_bad_cr(kubectl: Client, crds: None, namespace: str, path: Path) -> None:
    expected = expectation(path)
    error = rejection(kubectl, namespace, path)
    messages = [message for kind in CRDS for _, message in crds_messages(kind)]
    if expected is None:
        assert any(text in error for text in SCHEMA_REJECTIONS), error
        assert not [m for m in messages if m in error], f"a CEL rule fired, the schema should have:\n{error}"
    else:
        assert expected in error, error
        assert [m for m in messages if m in error] == [next(m for m in messages if expected in m)], \
            f"more than one CEL rule fired:\n{error}"


def crds_messages(kind: str) -> list[tuple[str, str]]:
    return crds.cel_messages(crds.openapi_schema(CRDS[kind]))


def test_every_cel_rule_is_exercised_by_a_bad_cr() -> None:
    expected = {expectation(p) for p in BAD_CRS} - {None}
    unexercised = [f"{kind} {path}: {message}" for kind in CRDS for path, message in crds_messages(kind)
                   if not any(e and e in message for e in expected)]
    assert unexercised == []


def test_examples_apply_cleanly_and_get_server_defaults(kubectl: Client, crds: None, namespace: str) -> None:
    for path in EXAMPLES:
        assert "namespace" not in yaml.safe_load(path.read_text())["metadata"], \
            f"{path.name}: examples are applied to a namespace of the user's choice"
    try:
        applied = kubectl("apply", "-n", namespace, "-k", str(EXAMPLES_DIR)).stdout  # as a GitOps tool would
        applied_cleanly(kubectl, namespace, applied)
    finally:  # the examples' CatalogPolicy is cluster-scoped: the namespace's deletion leaves it to later tests
        kubectl("delete", "catalogpolicy", "data-platform", "--ignore-not-found")


def applied_cleanly(kubectl: Client, namespace: str, applied: str) -> None:
    assert applied.count(" created") + applied.count(" unchanged") == len(EXAMPLES), applied
    kinds = ",".join([PLURALS[kind] for kind in NAMESPACED] + ["secrets"])
    before = versions(kubectl, namespace, kinds)
    # Re-applying changes nothing. (kubectl reports a Secret written with stringData as "configured" every
    # time, as on any cluster; its resourceVersion does not move.)
    kubectl("apply", "-n", namespace, "-k", str(EXAMPLES_DIR))
    assert versions(kubectl, namespace, kinds) == before
    for kind in NAMESPACED:
        for item in kubectl.json("get", "-n", namespace, PLURALS[kind])["items"]:
            assert item["spec"]["suspend"] is False, f"{kind} {item['metadata']['name']}: no server default"
    # The administrator's grant for the examples (cluster-scoped) got its server defaults too.
    [policy] = [i for i in kubectl.json("get", "catalogpolicies")["items"] if i["metadata"]["name"] == "data-platform"]
    assert policy["spec"]["storage"][1] == {"prefix": "s3://acme-analytics-dr/warehouse", "shared": False,
                                            "ambientCredentials": False}


def versions(kubectl: Client, namespace: str, kinds: str) -> dict[str, str]:
    items = kubectl.json("get", "-n", namespace, kinds)["items"]
    return {f"{i['kind']}/{i['metadata']['name']}": i["metadata"]["resourceVersion"] for i in items}


def test_crds_are_established_with_their_printer_columns(kubectl: Client, crds: None, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", str(EXAMPLES_DIR / "hivecatalog-dev-derby.yaml"))
    table = kubectl("get", "-n", namespace, "hivecatalogs").stdout.splitlines()
    assert table[0].split() == ["NAME", "MODE", "PHASE", "READY", "ENDPOINT", "AGE"]
    for kind, crd in CRDS.items():
        served = kubectl.json("get", "crd", crd["metadata"]["name"])
        established = [c for c in served["status"]["conditions"] if c["type"] == "Established"]
        assert established and established[0]["status"] == "True", kind
