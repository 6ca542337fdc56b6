"""What Kubernetes' own controllers would do, played explicitly by tests.

The local API server runs no controllers: nothing starts pods, so no Deployment becomes ready and no Job
finishes by itself. Tests call these helpers by name at the point a real cluster would have done the work,
so nobody mistakes it for the operator's doing. They write through the status subresource, as the
deployment and job controllers do.
"""

from __future__ import annotations

from typing import Any

from kube.api import Api
from kube.store import now_rfc3339 as _now


def play_deployment_controller_ready(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """All desired replicas up to date, available and ready, as the deployment controller reports it."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    deployment = api.get(path)
    replicas = deployment.get("spec", {}).get("replicas", 1)
    return api.merge_patch(path + "/status", {"status": {
        "observedGeneration": deployment["metadata"]["generation"],
        "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": _now()},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": _now()},
        ],
    }})


def _finish_job(api: Api, namespace: str, name: str, condition: str, reason: str) -> dict[str, Any]:
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"
    now = _now()
    counts = {"succeeded": 1} if condition == "Complete" else {"failed": 1}
    conditions = [{"type": condition, "status": "True", "reason": reason, "lastTransitionTime": now}]
    if condition == "Complete":  # since Kubernetes 1.31 a finished job also carries its *Target condition
        conditions.insert(0, {"type": "SuccessCriteriaMet", "status": "True", "reason": reason,
                              "lastTransitionTime": now})
    else:
        conditions.insert(0, {"type": "FailureTarget", "status": "True", "reason": reason,
                              "lastTransitionTime": now})
    return api.merge_patch(path + "/status", {"status": {
        "startTime": now, "active": 0, "ready": 0, **counts,
        **({"completionTime": now} if condition == "Complete" else {}),
        "conditions": conditions,
    }})


def play_job_controller_succeeded(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """The Job's pod ran to completion: conditions Complete=True, succeeded=1."""
    return _finish_job(api, namespace, name, "Complete", "CompletionsReached")


def play_job_controller_failed(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """The Job ran out of retries: conditions Failed=True (reason BackoffLimitExceeded), failed=1."""
    return _finish_job(api, namespace, name, "Failed", "BackoffLimitExceeded")
