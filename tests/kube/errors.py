"""API errors as the real server words them; kmock renders them as `kind: Status` bodies."""

from __future__ import annotations

import kmock

from kube.resources import ResourceType


def api_error(status: int, reason: str, message: str, rt: ResourceType | None = None,
              name: str | None = None) -> kmock.KubernetesError:
    details: dict[str, str] = {"name": name} if name else {}
    if rt is not None:
        details.update(group=rt.group, kind=rt.plural)
    # kmock puts a traceback into empty details; a real server never does, so keep them non-empty.
    return kmock.KubernetesError(status=status, reason=reason, message=message, details=details or {"causes": []})


def not_found(rt: ResourceType, name: str) -> kmock.KubernetesError:
    return api_error(404, "NotFound", f'{rt.describe()} "{name}" not found', rt, name)


def already_exists(rt: ResourceType, name: str) -> kmock.KubernetesError:
    return api_error(409, "AlreadyExists", f'{rt.describe()} "{name}" already exists', rt, name)


def conflict(rt: ResourceType, name: str) -> kmock.KubernetesError:
    return api_error(409, "Conflict", f'Operation cannot be fulfilled on {rt.describe()} "{name}": the object '
                                      "has been modified; please apply your changes to the latest version "
                                      "and try again", rt, name)


def invalid(rt: ResourceType, name: str | None, why: str) -> kmock.KubernetesError:
    return api_error(422, "Invalid", f'{rt.kind} "{name or ""}" is invalid: {why}', rt, name)


def bad_request(message: str) -> kmock.KubernetesError:
    return api_error(400, "BadRequest", message)


def forbidden(rt: ResourceType, name: str, why: str) -> kmock.KubernetesError:
    return api_error(403, "Forbidden", f'{rt.describe()} "{name}" is forbidden: {why}', rt, name)


def gone(message: str) -> kmock.KubernetesError:
    return api_error(410, "Expired", message)
