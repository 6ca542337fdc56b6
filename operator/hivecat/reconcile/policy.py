"""What a custom resource may make the operator run: images and service accounts come from an allow-list
the cluster administrator sets (Helm values `allowedImages`, `allowedServiceAccounts`), because a CR author
is not an administrator, yet the pods the operator creates run with what the CR names.

References reach only the CR's own namespace: the CRDs' Secret and ServiceAccount references have no
namespace field, and `same_namespace` refuses anything that would cross one.
Every check returns None (allowed) or a Violation whose `reason` becomes a condition reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hivecat import reasons


@dataclass(frozen=True)
class Violation:
    reason: str    # ImageNotAllowed | ServiceAccountNotAllowed | CrossNamespaceReference (stable: an API)
    message: str   # what is wrong and what to do, in words


def _matches(value: str, pattern: str) -> bool:
    """`pattern` is exact, or ends with `*` to allow everything that starts with the rest."""
    return value.startswith(pattern[:-1]) if pattern.endswith("*") else value == pattern


@dataclass(frozen=True)
class WorkloadPolicy:
    """Empty lists allow nothing to be named: a CR that names no image or service account gets the
    operator's defaults, which are always allowed."""

    allowed_images: tuple[str, ...] = ()            # e.g. "registry.example.com/data/*", "apache/hive:4.0.1"
    allowed_service_accounts: tuple[str, ...] = ()  # names, valid in any watched namespace; "*" allows all

    @classmethod
    def from_lists(cls, images: Iterable[str], service_accounts: Iterable[str]) -> WorkloadPolicy:
        clean = (lambda items: tuple(sorted({i.strip() for i in items if i.strip()})))
        return cls(clean(images), clean(service_accounts))

    def check_image(self, image: str | None, field: str) -> Violation | None:
        if image is None:
            return None
        if not image or "*" in image or any(c.isspace() for c in image):
            return Violation(reasons.IMAGE_NOT_ALLOWED, f"{field} {image!r} is not an image reference")
        if any(_matches(image, pattern) for pattern in self.allowed_images):
            return None
        allowed = ", ".join(self.allowed_images) or "none: CRs may not name images"
        return Violation(reasons.IMAGE_NOT_ALLOWED, f"{field} {image!r} is not in the operator's image allow-list "
                                            f"({allowed}); ask the cluster administrator to allow it, or leave "
                                            "the field out to use the default image")

    def check_service_account(self, name: str | None, field: str) -> Violation | None:
        if name is None:
            return None
        if any(_matches(name, pattern) for pattern in self.allowed_service_accounts):
            return None
        allowed = ", ".join(self.allowed_service_accounts) or "none: CRs may not name service accounts"
        return Violation(reasons.SERVICE_ACCOUNT_NOT_ALLOWED,
                         f"{field} {name!r} is not in the operator's service-account allow-list ({allowed}); ask "
                         "the cluster administrator to allow it, or leave the field out")


def same_namespace(resource_namespace: str, reference_namespace: str | None, field: str) -> Violation | None:
    """A reference (Secret, ServiceAccount, catalog) must stay in the CR's own namespace."""
    if reference_namespace in (None, resource_namespace):
        return None
    return Violation(reasons.CROSS_NAMESPACE_REFERENCE, f"{field} points into namespace {reference_namespace!r}; only "
                                                f"objects in {resource_namespace!r}, the resource's own namespace, "
                                                "may be referenced")
