"""Opening a catalog from a typed target: the one place that turns a SqlTarget, GlueTarget or ThriftTarget
(plus a password and where the journal lives) into a connected Catalog. The CLI and the operator's
handlers are two thin callers; neither builds backends itself.

Every failure to reach or recognise the catalog is a CatalogUnavailable with a stable `reason` and a
message that names neither a CLI flag nor a secret, so it can become a one-line CLI error or a status
condition."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hivecat import reasons
from hivecat.catalog.base import Catalog
from hivecat.catalog.engines import INSECURE_AUTHENTICATION, clear_text_refusal
from hivecat.catalog.model import EVENTS_AUTO
from hivecat.catalog.targets import CatalogTarget, GlueTarget, SqlTarget, ThriftTarget


class CatalogUnavailable(Exception):
    """The catalog could not be opened. `reason` is CamelCase and stable (it becomes a condition reason):
    DatabaseUnreachable, AuthenticationFailed, InsecureAuthentication, DatabaseNotFound, NotAMetastore,
    InvalidJournal, BackendUnreachable, MetastoreUnreachable."""

    def __init__(self, reason: str, message: str, *, password_given: bool = True):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.password_given = password_given  # lets a front end say where a missing password goes


@dataclass(frozen=True)
class JournalSettings:
    """Where relocation journals live. SQL catalogs: `schema`, a database (MySQL) or schema (PostgreSQL)
    on the metastore's server. Glue and Thrift: `url`, any SQLAlchemy URL (None: a SQLite file in the
    state directory, fine for a workstation, lost with a pod)."""

    schema: str = "hivecat"
    url: str | None = None


def open_catalog(target: CatalogTarget, *, password: str | None = None,
                 journal: JournalSettings = JournalSettings(),
                 glue_credentials: tuple[str, ...] | None = None, notification_events: str = EVENTS_AUTO) -> Catalog:
    """glue_credentials: (access key id, secret access key) from a Secret, or with the session token of an
    assumed role; None: boto3's usual chain (env, web identity for IRSA, instance role). notification_events:
    whether a SQL catalog logs its rewrites in the metastore's notification log (model.EVENTS_*)."""
    if isinstance(target, SqlTarget):
        return _open_sql(target, password, journal, notification_events)
    if isinstance(target, GlueTarget):
        return _open_glue(target, journal, glue_credentials)
    if isinstance(target, ThriftTarget):
        return _open_thrift(target, journal)
    raise TypeError(f"not a catalog target: {target!r}")


def _open_sql(target: SqlTarget, password: str | None, journal: JournalSettings, notification_events: str) -> Catalog:
    import sqlalchemy as sa

    from hivecat.catalog.sql.catalog import SqlCatalog
    from hivecat.catalog.sql.schema import NotAMetastore

    try:
        return SqlCatalog(target.url(password), journal_schema=journal.schema, notification_events=notification_events)
    except sa.exc.OperationalError as exc:
        reason, detail = sql_failure(exc.orig)
        raise CatalogUnavailable(reason, f"cannot connect to the metastore database {target.name} as "
                                         f"{target.user or '(no user)'}: {detail}",
                                 password_given=bool(password)) from None
    except sa.exc.DBAPIError as exc:
        raise CatalogUnavailable(reasons.DATABASE_UNREACHABLE, f"the metastore database {target.name} answered: "
                                                        f"{first_line(exc.orig)}") from None
    except NotAMetastore as exc:
        raise CatalogUnavailable(reasons.NOT_A_METASTORE, f"{target.name}: {exc}") from None
    except ValueError as exc:  # a journal placement SqlCatalog refuses
        raise CatalogUnavailable(reasons.INVALID_JOURNAL, str(exc)) from None


def sql_failure(error: BaseException | None) -> tuple[str, str]:
    """(reason, one-line detail) of a driver's connection error, without the driver's noise. Shared with
    catalog.probes, so opening a catalog and probing its database classify failures alike."""
    refusal = clear_text_refusal(error)
    if refusal is not None:  # the server wanted the password in clear text (catalog.engines)
        return INSECURE_AUTHENTICATION, refusal
    text = first_line(error)
    code = error.args[0] if error is not None and error.args and isinstance(error.args[0], int) else None
    if code in (1044, 1045) or "password authentication failed" in text or "no password supplied" in text:
        return reasons.AUTHENTICATION_FAILED, "access denied" + (f" ({text})" if code is None else "")
    if code == 1049 or ("database" in text and "does not exist" in text):
        return reasons.DATABASE_NOT_FOUND, "no such database"
    return reasons.DATABASE_UNREACHABLE, text


def first_line(error: BaseException | None) -> str:
    if error is None:
        return "no answer"
    if error.args and len(error.args) == 2 and isinstance(error.args[0], int):  # pymysql: (code, message)
        return str(error.args[1]).splitlines()[0]
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _open_glue(target: GlueTarget, journal: JournalSettings, credentials: tuple[str, ...] | None) -> Catalog:
    from botocore.exceptions import BotoCoreError, ClientError

    from hivecat.catalog.glue import GlueCatalog
    from hivecat.catalog.glue.defaults import glue_client

    # Keys from a Secret need a session of their own; without them, boto3's default client as the CLI had.
    client = glue_client(target.region, target.endpoint, credentials[0], credentials[1],
                         session_token=credentials[2] if len(credentials) > 2 else None) if credentials else None
    catalog = GlueCatalog(target.region, catalog_id=target.catalog_id, endpoint_url=target.endpoint,
                          journal_url=journal.url, segments=target.segments, functions=target.functions,
                          client=client)
    try:  # one cheap call, so an unreachable endpoint or missing credentials fail here, not mid-run
        catalog.client.get_databases(MaxResults=1, **({"CatalogId": target.catalog_id} if target.catalog_id
                                                      else {}))
    except ClientError as exc:
        catalog.close()
        error = exc.response.get("Error", {})
        denied = error.get("Code") in ("AccessDeniedException", "UnrecognizedClientException",
                                       "InvalidSignatureException")
        reason = reasons.AUTHENTICATION_FAILED if denied else reasons.BACKEND_UNREACHABLE
        raise CatalogUnavailable(reason, f"{target.name}: {error.get('Code')}: {error.get('Message')}") from None
    except BotoCoreError as exc:
        catalog.close()
        raise CatalogUnavailable(reasons.BACKEND_UNREACHABLE, f"cannot reach {target.name}: {exc}") from None
    return catalog


def _open_thrift(target: ThriftTarget, journal: JournalSettings) -> Catalog:
    from thrift.protocol.TProtocol import TProtocolException
    from thrift.Thrift import TException
    from thrift.transport.TTransport import TTransportException

    from hivecat.catalog.thrift import ThriftCatalog
    from hivecat.kerberos.errors import KerberosError

    socket_log = logging.getLogger("thrift.transport.TSocket")
    level = socket_log.level
    socket_log.setLevel(logging.CRITICAL)  # it logs each failed attempt; the one error below says it all
    try:
        catalog = ThriftCatalog(target.name, journal_url=journal.url, connections=target.connections,
                                sasl=target.sasl)
    except KerberosError as exc:
        raise CatalogUnavailable(reasons.AUTHENTICATION_FAILED, f"{target.name}: {exc}") from None
    except (TTransportException, OSError) as exc:
        raise CatalogUnavailable(reasons.METASTORE_UNREACHABLE, f"cannot connect to the metastore at {target.name}: "
                                                         f"{first_line(exc)}") from None
    finally:
        socket_log.setLevel(level)
    try:  # one call: a metastore that speaks SASL (Kerberos) answers plain Thrift with bytes that parse as nonsense
        catalog.client.getMetaConf("hive.metastore.uris")
    except TException as exc:
        if isinstance(exc, (TTransportException, TProtocolException)) or not getattr(exc, "message", None):
            catalog.close()
            sasl = "" if target.sasl else ("; a metastore with SASL (Kerberos) enabled answers plain Thrift like this: "
                                           "connect with its principal")
            raise CatalogUnavailable(reasons.METASTORE_UNREACHABLE,
                                     f"cannot connect to the metastore at {target.name}: it did not answer a Thrift "
                                     f"call ({first_line(exc)}){sasl}") from None
    except (OSError, EOFError) as exc:
        catalog.close()
        raise CatalogUnavailable(reasons.METASTORE_UNREACHABLE, f"cannot connect to the metastore at {target.name}: "
                                                         f"{first_line(exc)}") from None
    return catalog
