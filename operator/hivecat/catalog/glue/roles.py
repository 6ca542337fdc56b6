"""IAM roles the operator assumes for a namespace's Glue catalog (HiveCatalog spec.glue.roleArn), with its own
identity, and only where the administrator's CatalogPolicy grants that role to that namespace (the caller
checks: reconcile.access). The session is named after the namespace, so the cloud's audit log says whose
catalog a call was for."""

from __future__ import annotations

import re

SESSION_SECONDS = 900  # the shortest STS allows: a pass needs minutes at most, and asks again next time
_SESSION_CHARACTERS = re.compile(r"[^\w+=,.@-]")


def session_name(namespace: str) -> str:
    """RoleSessionName: 2 to 64 of [\\w+=,.@-]."""
    return _SESSION_CHARACTERS.sub("-", f"hivecat-{namespace}")[:64]


def assume_role(role_arn: str, region: str, namespace: str, timeout: float = 10) -> tuple[str, str, str]:
    """(access key, secret key, session token) of `role_arn`. Raises botocore's errors (probes.glue_failure
    classifies them)."""
    from hivecat import aws

    sts = aws.client("sts", region, settings=aws.ClientSettings(attempts=2, timeout=timeout))
    found = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name(namespace),
                            DurationSeconds=SESSION_SECONDS)["Credentials"]
    return found["AccessKeyId"], found["SecretAccessKey"], found["SessionToken"]
