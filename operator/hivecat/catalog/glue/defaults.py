"""Glue databases the operator provisions: the `default` database, and any database it creates, always with a
LocationUri — Glue fails CREATE TABLE (and Spark/Hive fail to place a managed table) in a database without
one. An existing database is never changed: a `default` without a location is reported to the user.

Blocking boto3 calls with timeouts; the operator runs them in a worker thread. Errors other than the
expected EntityNotFound/AlreadyExists propagate as botocore exceptions (`catalog.probes.glue_failure`
turns them into a reason and a message)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import ClientError

from hivecat import aws

DEFAULT_DATABASE = "default"
DEFAULT_ATTEMPTS = 3


def glue_client(region: str, endpoint: str | None = None, access_key: str | None = None,
                secret_key: str | None = None, timeout: float = 10, *, session_token: str | None = None,
                attempts: int = DEFAULT_ATTEMPTS) -> Any:
    """A Glue client with bounded waits, shared with every caller of the same keys and settings (hivecat.aws).
    Credentials: the given keys, else boto3's usual chain (env, web identity for IRSA, instance role)."""
    return aws.client("glue", region, endpoint, (access_key, secret_key, session_token),
                      aws.ClientSettings(attempts=max(1, attempts), timeout=timeout))


@dataclass(frozen=True)
class DefaultDatabaseOutcome:
    """What ensure_default_database found or did. `kind` is CamelCase and stable: Created (hivecat made it),
    Present (it exists with a location; `location` is the one it has), MissingLocation (it exists without
    one: reported, not changed)."""

    kind: Literal["Created", "Present", "MissingLocation"]
    location: str | None
    message: str


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _catalog(catalog_id: str | None) -> dict[str, str]:
    return {"CatalogId": catalog_id} if catalog_id else {}


def _get_database(client: Any, catalog_id: str | None, name: str) -> dict | None:
    try:
        return client.get_database(**_catalog(catalog_id), Name=name)["Database"]
    except ClientError as exc:
        if _code(exc) == "EntityNotFoundException":
            return None
        raise


def create_database(client: Any, catalog_id: str | None, name: str, location: str) -> None:
    """Create Glue database `name` with LocationUri `location`. Raises ClientError (AlreadyExistsException
    when it exists: the caller decides whether that is fine)."""
    if not location or not location.strip():
        raise ValueError(f"a Glue database needs a location: Glue fails CREATE TABLE in {name!r} without one")
    client.create_database(**_catalog(catalog_id), DatabaseInput={"Name": name, "LocationUri": location.strip()})


def _existing(database: dict, wanted: str) -> DefaultDatabaseOutcome:
    location = database.get("LocationUri") or None
    if location:
        return DefaultDatabaseOutcome("Present", location, f"the Glue database {DEFAULT_DATABASE!r} exists with "
                                                           f"location {location}")
    return DefaultDatabaseOutcome(
        "MissingLocation", None,
        f"the Glue database {DEFAULT_DATABASE!r} exists without a location URI, so Glue refuses to create tables "
        f"in it; set its location URI (for example to {wanted}) in the Glue console or with UpdateDatabase. "
        "hivecat does not change a database it did not create")


def ensure_default_database(client: Any, catalog_id: str | None, location: str) -> DefaultDatabaseOutcome:
    """Make sure `default` exists with a location: create it at `location` when absent (idempotent; a
    concurrent create counts as present); report, never change, an existing one."""
    found = _get_database(client, catalog_id, DEFAULT_DATABASE)
    if found is not None:
        return _existing(found, location)
    try:
        create_database(client, catalog_id, DEFAULT_DATABASE, location)
    except ClientError as exc:
        if _code(exc) != "AlreadyExistsException":
            raise
        # Someone created it between our read and our create: judge theirs like any existing one.
        found = _get_database(client, catalog_id, DEFAULT_DATABASE)
        if found is None:  # created and dropped again in between: the next reconcile tries afresh
            raise
        return _existing(found, location)
    return DefaultDatabaseOutcome("Created", location.strip(), f"created the Glue database {DEFAULT_DATABASE!r} "
                                                               f"with location {location.strip()}")
