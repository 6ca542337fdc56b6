"""Where a catalog is, as typed values: the metastore database (SQL), AWS Glue, or a metastore's Thrift
API. Front ends build one — the CLI from a URL (`target_from_url`), the operator from a HiveCatalog spec —
and `catalog.connect.open_catalog` opens it. Credentials are never part of a target."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa

from hivecat.kerberos.login import KerberosLogin

SqlDialect = Literal["mysql", "postgresql"]
DEFAULT_PORTS: dict[str, int] = {"mysql": 3306, "postgresql": 5432, "thrift": 9083}
# URL schemes users write for a metastore database, and the dialect each means.
SQL_SCHEMES: dict[str, SqlDialect] = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgresql",
                                      "postgres": "postgresql"}
# The SQLAlchemy driver hivecat uses for each dialect.
SQL_DRIVERS: dict[SqlDialect, str] = {"mysql": "mysql+pymysql", "postgresql": "postgresql+psycopg"}
# Metastore connections a Thrift relocation writes chunks through at once.
DEFAULT_THRIFT_CONNECTIONS, MAX_THRIFT_CONNECTIONS = 4, 32
_REGION = re.compile(r"[a-z]{2,}(-[a-z0-9]+)+")
_CATALOG_ID = re.compile(r"[0-9]{12}")


class InvalidTarget(ValueError):
    """A catalog address that is malformed; nothing was contacted."""


def check_thrift_connections(connections: int) -> None:
    """InvalidTarget unless 1 <= connections <= MAX_THRIFT_CONNECTIONS."""
    if not 1 <= connections <= MAX_THRIFT_CONNECTIONS:
        raise InvalidTarget(f"a Thrift relocation writes through 1 to {MAX_THRIFT_CONNECTIONS} metastore "
                            f"connections, not {connections}")


@dataclass(frozen=True)
class SqlTarget:
    """The metastore's own database: read and written in transactions."""

    dialect: SqlDialect
    host: str
    database: str
    user: str
    port: int | None = None  # None: the dialect's default

    @property
    def name(self) -> str:
        """Names the catalog in journals, locks and messages; never holds credentials."""
        return f"{self.dialect}://{self.host}:{self.port or DEFAULT_PORTS[self.dialect]}/{self.database}"

    def url(self, password: str | None) -> sa.URL:
        return sa.URL.create(SQL_DRIVERS[self.dialect], username=self.user or None, password=password or None,
                             host=self.host, port=self.port or DEFAULT_PORTS[self.dialect], database=self.database)


@dataclass(frozen=True)
class GlueTarget:
    """An AWS Glue Data Catalog (credentials: boto3's usual chain)."""

    region: str
    catalog_id: str | None = None  # the AWS account id; None: the caller's own
    endpoint: str | None = None    # a non-default endpoint, e.g. a test server
    segments: int = 1              # partitions read in this many parallel segments (Glue allows 1..10)
    functions: bool = True         # False: leave function resource URIs alone (an endpoint without the UDF API)

    def __post_init__(self) -> None:
        if not _REGION.fullmatch(self.region):
            raise InvalidTarget(f"{self.region!r} is not an AWS region (e.g. eu-west-1)")
        if self.catalog_id is not None and not _CATALOG_ID.fullmatch(self.catalog_id):
            raise InvalidTarget(f"{self.catalog_id!r} is not a Glue catalog id (a 12-digit AWS account id)")
        if not 1 <= self.segments <= 10:
            raise InvalidTarget(f"Glue reads partitions in 1 to 10 segments, not {self.segments}")

    @property
    def name(self) -> str:
        return f"glue://{self.region}" + (f"/{self.catalog_id}" if self.catalog_id else "")


@dataclass(frozen=True)
class ThriftSasl:
    """SASL GSSAPI (Kerberos) to a metastore with hive.metastore.sasl.enabled: who connects (a login) and to whom
    (the metastore's principal, its hive.metastore.kerberos.principal; Hadoop's _HOST is completed with the host
    of the thrift:// URI, lower case, as Hive's own clients do)."""

    login: KerberosLogin
    principal: str

    def service(self, host: str) -> str:
        return self.principal.replace("_HOST", host.lower())


@dataclass(frozen=True)
class ThriftTarget:
    """A Hive Metastore's Thrift API."""

    host: str
    port: int = DEFAULT_PORTS["thrift"]
    connections: int = DEFAULT_THRIFT_CONNECTIONS  # relocation chunks written at once, one connection each
    sasl: ThriftSasl | None = None                 # None: plain Thrift

    def __post_init__(self) -> None:
        check_thrift_connections(self.connections)

    @property
    def name(self) -> str:
        return f"thrift://{self.host}:{self.port}"


CatalogTarget = SqlTarget | GlueTarget | ThriftTarget


def _redacted(raw: str) -> str:
    """`raw` fit for a message: a password in user:password@ or in the query becomes ***."""
    parts = urllib.parse.urlsplit(raw)
    if parts.password is None and not re.search(r"(?i)\bpass(word|wd)=", parts.query):
        return raw
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username}:***@" + netloc.rpartition("@")[2]
    query = "&".join(f"{k}=***" if k.lower() in ("password", "passwd") else f"{k}={v}"
                     for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _port(parts: urllib.parse.SplitResult, raw: str) -> int | None:
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        netloc_port = parts.netloc.rpartition(":")[2]
        raise InvalidTarget(f"{raw!r}: the port must be a number from 1 to 65535, not {netloc_port!r}")
    return port


def target_from_url(raw: str) -> CatalogTarget:
    """mysql|mariadb|postgresql://USER@HOST[:PORT]/DB, glue://REGION[/CATALOG_ID] or thrift://HOST[:PORT].

    A password in the URL (user:password@, or a query parameter) is refused: it would end up in shell
    history, process listings and error messages.
    """
    parts = urllib.parse.urlsplit(raw.strip())
    scheme = parts.scheme.lower()
    raw = _redacted(raw.strip())  # every message below shows this form
    if "://" not in raw:
        raise InvalidTarget(f"{raw!r} is not a catalog URL: use mysql://USER@HOST:PORT/DB, "
                            "postgresql://USER@HOST:PORT/DB, glue://REGION[/CATALOG_ID] or thrift://HOST:PORT")
    port = _port(parts, raw)
    if parts.fragment:
        raise InvalidTarget(f"{raw!r}: a catalog URL has no #fragment")
    if scheme == "thrift":
        if parts.username or parts.password:
            raise InvalidTarget(f"{raw!r}: a metastore's Thrift API takes no user or password in its URL (a "
                                "kerberized one takes a Kerberos login); write thrift://HOST:PORT")
        if not parts.hostname or parts.path.strip("/") or parts.query:
            raise InvalidTarget(f"{raw!r}: expected thrift://HOST:PORT, e.g. thrift://metastore:9083")
        return ThriftTarget(parts.hostname, port or DEFAULT_PORTS["thrift"])
    if scheme == "glue":
        if parts.username or parts.password or parts.query or port is not None:
            raise InvalidTarget(f"{raw!r}: expected glue://REGION[/CATALOG_ID], e.g. glue://eu-west-1; AWS "
                                "credentials come from the usual AWS chain, never from the URL")
        return GlueTarget(parts.hostname or "", parts.path.strip("/") or None)
    if scheme in SQL_SCHEMES:
        query = urllib.parse.parse_qs(parts.query)
        if parts.password is not None or any(key.lower() in ("password", "passwd") for key in query):
            raise InvalidTarget(f"{scheme}:// URL carries a password; leave it out of the URL and give it "
                                "separately")
        if parts.query:
            raise InvalidTarget(f"{raw!r}: a metastore database URL takes no ?options")
        database = parts.path.strip("/")
        if not parts.hostname or not database or "/" in database:
            raise InvalidTarget(f"{raw!r}: expected {scheme}://USER@HOST[:PORT]/DATABASE")
        return SqlTarget(SQL_SCHEMES[scheme], parts.hostname, urllib.parse.unquote(database),
                         urllib.parse.unquote(parts.username or ""), port)
    raise InvalidTarget(f"unsupported catalog {scheme!r}: use mysql://, mariadb://, postgresql://, glue:// or "
                        "thrift://")
