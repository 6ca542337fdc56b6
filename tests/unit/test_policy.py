"""The allow-list a cluster administrator sets decides which images and service accounts a CR may name."""

from __future__ import annotations

import pytest

from hivecat.reconcile.policy import WorkloadPolicy, same_namespace

POLICY = WorkloadPolicy.from_lists(["registry.example.com/data/*", "apache/hive:4.0.1", " "], ["spark", "copier"])


@pytest.mark.parametrize("image,allowed", [
    (None, True),  # not named: the operator's default image
    ("registry.example.com/data/spark-hadoop:3.5.1", True),
    ("registry.example.com/data/hive@sha256:" + "a" * 64, True),
    ("apache/hive:4.0.1", True),
    ("apache/hive:4.0.0", False),
    ("registry.example.com/datax/evil:1", False),  # a prefix pattern ends at the slash it names
    ("evil.example.com/registry.example.com/data/x:1", False),
    ("registry.example.com/data/*", False),  # a pattern is not an image
    ("", False),
])
def test_images(image: str | None, allowed: bool) -> None:
    violation = POLICY.check_image(image, "spec.metastore.image")
    assert (violation is None) is allowed
    if violation:
        assert violation.reason == "ImageNotAllowed" and "spec.metastore.image" in violation.message


@pytest.mark.parametrize("name,allowed", [(None, True), ("spark", True), ("copier", True), ("default", False),
                                          ("spark-admin", False)])
def test_service_accounts(name: str | None, allowed: bool) -> None:
    violation = POLICY.check_service_account(name, "spec.compute.kubernetesJob.serviceAccountName")
    assert (violation is None) is allowed
    if violation:
        assert violation.reason == "ServiceAccountNotAllowed"


def test_empty_allow_list_allows_only_defaults() -> None:
    policy = WorkloadPolicy()
    assert policy.check_image(None, "f") is None and policy.check_service_account(None, "f") is None
    assert "CRs may not name images" in policy.check_image("apache/hive:4.0.1", "f").message
    assert WorkloadPolicy(allowed_service_accounts=("*",)).check_service_account("anything", "f") is None


def test_references_stay_in_the_resources_namespace() -> None:
    assert same_namespace("data", None, "spec.catalogRef") is None
    assert same_namespace("data", "data", "spec.catalogRef") is None
    violation = same_namespace("data", "kube-system", "spec.catalogRef")
    assert violation is not None and violation.reason == "CrossNamespaceReference"
