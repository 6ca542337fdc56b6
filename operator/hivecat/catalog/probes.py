"""Is the catalog's backend reachable right now? One cheap, real call per backend, bounded by a timeout, for
the HiveCatalog `BackendReachable` condition (on reconcile and on the timer that re-checks it).

Blocking calls: the operator runs them in a worker thread. A probe never raises for a backend that is
down or refuses us; it returns a ProbeResult whose reason is CamelCase and stable (a condition reason) and
whose message says what is wrong in words, never with a password, a secret key or a traceback."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hivecat import reasons
from hivecat.catalog.connect import first_line, sql_failure
from hivecat.catalog.targets import SqlTarget, ThriftSasl

# Glue error codes that mean "these credentials may not do this" rather than "Glue is not there".
GLUE_DENIED_CODES = frozenset({
    "AccessDeniedException", "AccessDenied", "UnrecognizedClientException", "InvalidClientTokenId",
    "InvalidSignatureException", "SignatureDoesNotMatch", "ExpiredTokenException", "ExpiredToken",
    "MissingAuthenticationTokenException", "IncompleteSignature", "AuthFailure", "NotAuthorized",
})
_MAX_DETAIL = 300


@dataclass(frozen=True)
class ProbeResult:
    """ok, a stable CamelCase reason (Reachable, DatabaseUnreachable, AuthenticationFailed, InsecureAuthentication,
    DatabaseNotFound, MetastoreUnreachable, GlueUnreachable, GlueAccessDenied) and a message for a condition."""

    ok: bool
    reason: str
    message: str


def _scrubbed(text: str, secrets: tuple[str | None, ...]) -> str:
    """`text` on one line, short, with any secret replaced: drivers and services sometimes echo input."""
    for secret in secrets:
        if secret:  # whole tokens only, so a short password does not mangle ordinary words around it
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL - 3] + "..."


# --- SQL ---------------------------------------------------------------------------------------------

def _sql_connect_args(dialect: str, timeout: float) -> dict[str, Any]:
    if dialect == "mysql":  # pymysql: seconds, for the connect and for each read/write
        return {"connect_timeout": timeout, "read_timeout": timeout, "write_timeout": timeout}
    # psycopg/libpq: whole seconds (libpq treats less than 2 as 2), per address tried; statement_timeout
    # bounds SELECT 1 on a server that accepts but stalls.
    return {"connect_timeout": max(2, round(timeout)), "options": f"-c statement_timeout={int(timeout * 1000)}"}


def probe_sql(target: SqlTarget, password: str, timeout: float = 5) -> ProbeResult:
    """Connect to the metastore database and run SELECT 1."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    from hivecat.catalog.engines import sql_engine

    who = f"{target.name} as {target.user or '(no user)'}"
    engine = sql_engine(target.url(password), poolclass=NullPool,
                        connect_args=_sql_connect_args(target.dialect, timeout))
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1")).scalar_one()
    except sa.exc.OperationalError as exc:
        reason, detail = sql_failure(exc.orig)  # the same classification as opening the catalog
        return ProbeResult(False, reason, f"cannot connect to the metastore database {who}: "
                                          f"{_scrubbed(detail, (password,))}")
    except sa.exc.DBAPIError as exc:
        return ProbeResult(False, reasons.DATABASE_UNREACHABLE, f"the metastore database {target.name} answered: "
                                                         f"{_scrubbed(first_line(exc.orig), (password,))}")
    finally:
        engine.dispose()
    return ProbeResult(True, reasons.REACHABLE, f"the metastore database {target.name} answers")


# --- Thrift ------------------------------------------------------------------------------------------

def probe_thrift(host: str, port: int, timeout: float = 5, sasl: ThriftSasl | None = None) -> ProbeResult:
    """Open a Thrift connection to the metastore and call get_all_databases: a port that accepts
    connections is not yet a metastore that answers. `sasl`: a kerberized metastore, reached as that login."""
    from hmsclient import hmsclient
    from thrift.protocol import TBinaryProtocol
    from thrift.Thrift import TException
    from thrift.transport import TSocket, TTransport

    from hivecat.catalog.thrift.transport import SaslClientTransport
    from hivecat.kerberos.errors import KerberosError
    from hivecat.kerberos.sasl import GssapiSasl

    address = f"thrift://{host}:{port}"
    deadline = time.monotonic() + timeout
    try:
        # Connect ourselves rather than through TSocket.open, which logs every failed attempt at ERROR
        # level (noisy on a timer) and whose logger connect.py can only silence process-wide.
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        return ProbeResult(False, reasons.METASTORE_UNREACHABLE, f"cannot connect to the metastore at {address}: "
                                                          f"{_scrubbed(first_line(exc), ())}")
    transport = TSocket.TSocket()
    transport.setHandle(sock)
    sock.settimeout(max(0.1, deadline - time.monotonic()))  # the whole probe stays within `timeout`
    try:
        # Kerberized: Thrift's SASL framing over the socket, its handshake before the call.
        wire = transport if sasl is None else SaslClientTransport(transport, GssapiSasl(sasl.login,
                                                                                          sasl.service(host)))
        client = hmsclient.HMSClient(iprot=TBinaryProtocol.TBinaryProtocol(TTransport.TBufferedTransport(wire)))
        if sasl is not None:
            wire.open()
        client.get_all_databases()
    except KerberosError as exc:
        return ProbeResult(False, reasons.AUTHENTICATION_FAILED, f"the metastore at {address}: {exc}")
    except (TException, OSError, EOFError) as exc:
        detail = getattr(exc, "message", None) or first_line(exc)
        return ProbeResult(False, reasons.METASTORE_UNREACHABLE, f"the metastore at {address} accepted a connection but "
                                                          f"did not answer a Thrift call: {_scrubbed(str(detail), ())}")
    finally:
        transport.close()
    return ProbeResult(True, reasons.REACHABLE, f"the metastore at {address} answers")


# --- Glue --------------------------------------------------------------------------------------------

def glue_failure(exc: Exception, where: str, secrets: tuple[str | None, ...] = ()) -> ProbeResult:
    """Reason and message for a botocore error from a Glue call: credentials refused vs Glue not reached.
    Also for the handler's other Glue calls (ensure_default_database)."""
    from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "")) or "UnknownError"
        detail = _scrubbed(f"{code}: {error.get('Message', '')}".rstrip(": "), secrets)
        if code in GLUE_DENIED_CODES:
            return ProbeResult(False, reasons.GLUE_ACCESS_DENIED, f"{where} refused the credentials ({detail}); check the "
                                                          "referenced Secret's access key, or the role's Glue "
                                                          "permissions")
        return ProbeResult(False, reasons.GLUE_UNREACHABLE, f"{where} answered with an error: {detail}")
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return ProbeResult(False, reasons.GLUE_ACCESS_DENIED, f"no complete AWS credentials for {where}: reference a "
                                                      "Secret with an access key and secret key, or give the "
                                                      "operator a role")
    return ProbeResult(False, reasons.GLUE_UNREACHABLE, f"cannot reach {where}: {_scrubbed(first_line(exc), secrets)}")


def probe_glue(session_args: Mapping[str, str | None] | None, region: str, catalog_id: str | None = None,
               endpoint: str | None = None, timeout: float = 5) -> ProbeResult:
    """GetDatabases with MaxResults=1 against the catalog. `session_args`: boto3 session credentials
    (aws_access_key_id, aws_secret_access_key, aws_session_token); empty or None: boto3's usual chain."""
    from botocore.exceptions import BotoCoreError, ClientError

    from hivecat.catalog.glue.defaults import glue_client

    args = dict(session_args or {})
    unknown = set(args) - {"aws_access_key_id", "aws_secret_access_key", "aws_session_token"}
    if unknown:  # a programming error, not a backend state
        raise ValueError(f"unsupported Glue session arguments: {sorted(unknown)}")
    secrets = (args.get("aws_secret_access_key"), args.get("aws_session_token"))
    where = f"Glue in {region}" + (f" (catalog {catalog_id})" if catalog_id else "") + \
        (f" at {endpoint}" if endpoint else "")
    try:
        # One attempt: a probe reports the state now; the timer asks again later.
        client = glue_client(region, endpoint, args.get("aws_access_key_id"), args.get("aws_secret_access_key"),
                             timeout, session_token=args.get("aws_session_token"), attempts=1)
        client.get_databases(MaxResults=1, **({"CatalogId": catalog_id} if catalog_id else {}))
    except (ClientError, BotoCoreError) as exc:
        return glue_failure(exc, where, secrets)
    except ValueError as exc:  # botocore refuses a malformed endpoint URL before any request
        return ProbeResult(False, reasons.GLUE_UNREACHABLE, f"cannot reach {where}: {_scrubbed(str(exc), secrets)}")
    return ProbeResult(True, reasons.REACHABLE, f"{where} answers")
