"""The SparkApplication CustomResourceDefinition the operator tier installs, so that its API server checks the
SparkApplications hivecat builds (workloads/spark_application.py) as it checks Jobs.

Ours, not the Spark operator's own file: no package registry this project reaches ships that CRD. The Go module
proxy refuses github.com/kubeflow/spark-operator (and /v2, and the older GoogleCloudPlatform/spark-on-k8s-operator)
with "403 This module version is not available", and no PyPI, npm or Maven Central package carries the YAML.
So sparkapplications.sparkoperator.k8s.io.yaml beside this file holds the fields the launcher may set, with the
names, types, enums, minimums and required fields of the v1beta2 API, as a structural schema that prunes unknown
fields as the real one does. When a registry serves the real CRD, fetch it into ~/.cache/hivecat here instead.
"""

from __future__ import annotations

from pathlib import Path

CRD_PATH = Path(__file__).with_name("sparkapplications.sparkoperator.k8s.io.yaml")
CRD_NAME = "sparkapplications.sparkoperator.k8s.io"


def spark_application_crd() -> Path:
    """Path of the CRD's YAML, for `kubectl apply -f`."""
    return CRD_PATH
