"""Least privilege, measured: the test control plane's API server audits every request a service account makes
(tests/kube/controlplane.py), and after the rest of the operator tier this compares what the operator's
identities (the chart's ServiceAccount, namespaced and cluster-wide) did with what the chart grants: every use
has a rule, and every rule a use (or a stated reason). Named to run last in the tier; run alone, it has
nothing to compare and says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from kube.clients import Client
from kube.controlplane import ControlPlane
from kube.identity import CHART

OPERATOR_USERS = ("system:serviceaccount:hivecat-system:hivecat", "system:serviceaccount:hivecat-system:hivecat-cw")
# Allowed to every authenticated user by Kubernetes' own roles, and made here by the tests' `kubectl auth can-i`
# as the operator's identity (tests/kube/identity.py), not by the operator.
EVERYONE = {("authorization.k8s.io", "selfsubjectaccessreviews", "create")}


# Granted though the operator tier never shows them used, each for a reason. The test fails when the audit and
# the chart disagree otherwise: a rule nothing uses goes from the chart, or is added here with its reason.
NEEDED_UNSEEN = {
    ("sparkoperator.k8s.io", "sparkapplications", "delete"): "a finished SparkApplication is deleted before the "
    "next copy run of the same name; the tier runs one SparkApplication",
}


def granted(helm: Client) -> set[tuple[str, str, str]]:
    """(apiGroup, resource[/subresource], verb) of every rule the chart renders (cluster-wide: all of them)."""
    rendered = helm("template", "hivecat", str(CHART), "--namespace", "hivecat-system", "--set", "clusterWide=true",
                    "--show-only", "templates/rbac.yaml").stdout
    rules = [rule for doc in yaml.safe_load_all(rendered) if doc and doc["kind"] in ("Role", "ClusterRole")
             for rule in doc["rules"]]
    return {(group, resource, verb) for rule in rules for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def used(audit_log: Path) -> set[tuple[str, str, str]]:
    """What the operator's identities did and were allowed to (a 404 is a use of the rule; a 403 is not)."""
    found = set()
    with audit_log.open() as lines:
        for line in lines:
            event = json.loads(line)
            ref = event.get("objectRef")
            if event["user"].get("username") not in OPERATOR_USERS or ref is None:
                continue
            if event.get("responseStatus", {}).get("code", 200) == 403:
                continue
            resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
            found.add((ref.get("apiGroup", ""), resource, event["verb"]))
    return found - EVERYONE


def test_the_operator_used_only_what_the_chart_grants_and_the_chart_grants_what_it_uses(
        request: pytest.FixtureRequest, control_plane: ControlPlane, helm: Client) -> None:
    others = {item.path.name for item in request.session.items} - {Path(__file__).name}
    if len(others) < 10:
        pytest.skip("compares the whole operator tier's requests with the chart: run `pytest tests/operator`")
    assert control_plane.audit_log is not None and control_plane.audit_log.is_file()
    rules, calls = granted(helm), used(control_plane.audit_log)
    assert calls, "no request of the operator's identities was audited"
    assert calls <= rules, f"used without a rule (the API server refused them): {sorted(calls - rules)}"
    unused = rules - calls - set(NEEDED_UNSEEN)
    assert not unused, f"the chart grants rules the operator never used: {sorted(unused)} (remove them, or say in " \
                       "NEEDED_UNSEEN why production needs them)"
    assert set(NEEDED_UNSEEN) <= rules - calls, \
        f"used after all, so no reason is needed: {sorted(set(NEEDED_UNSEEN) & calls)}"
