"""hive-site.xml and the JDBC settings in it: how a Hive Metastore finds its schema database.

Pure functions, shared by the operator's metastores and the dev launcher (hivecat/local/metastore.py).
JDBC URLs never hold the password: it is a property of its own (javax.jdo.option.ConnectionPassword), so
URLs can be logged and shown in status while the password stays wherever the caller keeps secrets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from xml.sax.saxutils import escape

MARIADB_DRIVER: Final = "org.mariadb.jdbc.Driver"
POSTGRESQL_DRIVER: Final = "org.postgresql.Driver"

_QUOTE: Final = {'"': "&quot;"}  # escape() covers <&>; quotes too, so the text would be safe in attributes

# A database name becomes part of a URL path: no separators, no query or fragment, no whitespace.
_DATABASE_NAME = re.compile(r"[^/?#&;\s]+")


@dataclass(frozen=True)
class JdbcConnection:
    """A JDBC URL and the driver class that speaks it."""

    url: str
    driver: str


def mariadb_jdbc(host: str, port: int, database: str) -> JdbcConnection:
    """MariaDB or MySQL, through MariaDB Connector/J."""
    # useMysqlMetadata makes the MariaDB driver report itself as MySQL, which DataNucleus expects.
    return JdbcConnection(f"jdbc:mysql://{_authority(host, port)}/{_database(database)}?useMysqlMetadata=true",
                          MARIADB_DRIVER)


def postgresql_jdbc(host: str, port: int, database: str) -> JdbcConnection:
    return JdbcConnection(f"jdbc:postgresql://{_authority(host, port)}/{_database(database)}", POSTGRESQL_DRIVER)


def _authority(host: str, port: int) -> str:
    if not host or any(c in host for c in "/?#@ "):
        raise ValueError(f"invalid database host {host!r}")
    if not 0 < port < 65536:
        raise ValueError(f"invalid database port {port}")
    if ":" in host and not host.startswith("["):  # an IPv6 literal
        host = f"[{host}]"
    return f"{host}:{port}"


def _database(name: str) -> str:
    # Refuse rather than quote: a name from a resource's spec must not smuggle JDBC parameters into the URL.
    if not _DATABASE_NAME.fullmatch(name):
        raise ValueError(f"invalid database name {name!r}")
    return name


def connection_properties(jdbc: JdbcConnection, user: str, password: str) -> dict[str, str]:
    """The hive-site.xml properties that point a metastore at its database."""
    return {
        "javax.jdo.option.ConnectionURL": jdbc.url,
        "javax.jdo.option.ConnectionDriverName": jdbc.driver,
        "javax.jdo.option.ConnectionUserName": user,
        "javax.jdo.option.ConnectionPassword": password,
    }


def hive_site_xml(properties: Mapping[str, str]) -> str:
    """A Hadoop configuration document, properties sorted by name (stable output for config hashes)."""
    rows = "".join(
        f"  <property><name>{escape(name, _QUOTE)}</name><value>{escape(value, _QUOTE)}</value></property>\n"
        for name, value in sorted(properties.items())
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


# Property names that carry secrets. Client configuration is published in ConfigMaps, so these are refused
# there (and at admission by the HiveCatalog CRD's rule, which uses the same pattern); secrets reach pods
# from Secret refs as environment variables or files instead. The pattern is searched, not anchored.
SECRET_PROPERTY: Final = re.compile(r"password|passwd|secret|session\.token|account\.key|access\.key")


def secret_properties(properties: Mapping[str, str]) -> list[str]:
    """The names among `properties` that carry secrets, sorted (empty: publishable)."""
    return sorted(name for name in properties if SECRET_PROPERTY.search(name.lower()))


def publishable_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """`properties` for client configuration that anyone reading the ConfigMap sees; refuses secrets."""
    refused = secret_properties(properties)
    if refused:
        raise ValueError(f"configuration properties {', '.join(refused)} carry secrets: they must come from a "
                         "Secret, never from client configuration")
    return dict(properties)
