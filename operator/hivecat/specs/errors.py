"""The one error a spec parser raises: what the CRD could not reject, as a condition reason and message."""

from __future__ import annotations


class SpecInvalid(Exception):
    """A custom resource's spec that cannot be acted on. The handler turns it into a condition; nothing is
    created or changed. `reason` is CamelCase and stable (an API); `message` says, in words, what is wrong
    and what to do, never a CLI flag or a secret."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    def __repr__(self) -> str:
        return f"SpecInvalid({self.reason!r}, {self.message!r})"
