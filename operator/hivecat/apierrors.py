"""What the Kubernetes API answers that the reconcilers act on, as exceptions of their own: raised by hivecat.k8s,
caught by pure code (reconcile/) that must not import the client that raises them."""

from __future__ import annotations

from hivecat.reasons import NAME_TAKEN


class SecretUnavailable(Exception):
    """A referenced Secret or key is missing or unreadable; `reason` is a stable condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class NamespaceTerminating(Exception):
    """The namespace is being deleted: the API server creates nothing new in it (everything there goes)."""


class NameTaken(Exception):
    """An object of the name hivecat needs exists, and hivecat did not create it for this owner."""

    reason = NAME_TAKEN

    def __init__(self, kind: str, namespace: str | None, name: str) -> None:
        self.message = (f"{kind} {namespace}/{name} exists and was not created by hivecat for this resource: hivecat "
                        "never takes over or deletes an object it did not create; rename or remove that object")
        super().__init__(self.message)
