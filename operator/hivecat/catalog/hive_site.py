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

# C0 control characters (tab, CR and LF among them) and DEL. XML 1.0 cannot hold most of them and a parser
# folds the rest, and a line break in spark-defaults.conf would start another property, so configuration
# names and values never carry one: refused by the HiveCatalog CRD's rule (the same class; a unit test
# compares them), by the spec parser and, belt and braces, by the writers below.
CONTROL_CHARACTER: Final = re.compile(r"[\x00-\x1f\x7f]")


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


@dataclass(frozen=True)
class ControlCharacter:
    """Where a property holds a control character: in its name or its value, and which (U+XXXX)."""

    part: str       # "name" or "value"
    name: str       # the property's name
    character: str  # e.g. U+000A

    def describe(self) -> str:
        """One line that names the property (escaped) and the character, never the value."""
        return f"the {self.part} of property {self.name[:80]!r} holds the control character {self.character}"


def control_character(properties: Mapping[str, str]) -> ControlCharacter | None:
    """The first control character in the names and values of `properties`, or None when there is none."""
    for name, value in properties.items():
        for part, text in (("name", name), ("value", value)):
            if found := CONTROL_CHARACTER.search(text):
                return ControlCharacter(part, name, f"U+{ord(found.group()):04X}")
    return None


def refuse_control_characters(properties: Mapping[str, str], document: str) -> None:
    """ValueError (one line) if a name or value holds a control character: `document` cannot carry it."""
    if (found := control_character(properties)) is not None:
        raise ValueError(f"{document}: {found.describe()}, which the file cannot carry")


def hive_site_xml(properties: Mapping[str, str]) -> str:
    """A Hadoop configuration document, properties sorted by name (stable output for config hashes).
    ValueError for a control character (refuse_control_characters)."""
    refuse_control_characters(properties, "hive-site.xml")
    rows = "".join(
        f"  <property><name>{escape(name, _QUOTE)}</name><value>{escape(value, _QUOTE)}</value></property>\n"
        for name, value in sorted(properties.items())
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


# Property names that carry secrets. Client configuration is published in ConfigMaps, so these are refused
# there (and at admission by the HiveCatalog CRD's rule, which uses the same pattern); secrets reach pods
# from Secret refs as environment variables or files instead. The pattern is searched, not anchored.
SECRET_PROPERTY: Final = re.compile(r"password|passwd|secret|session\.token|account\.key|access\.key")


# A value that Hadoop's Configuration would resolve to a secret where it is read: the environment (the metastore's
# holds its database password) or a property that carries one. Read back through the metastore's Thrift API
# (get_config_value), such a property would hand the password to any client.
SECRET_REFERENCE: Final = re.compile(r"\$\{(env\.|[^}]*(password|passwd|secret|access\.key|session\.token))",
                                     re.IGNORECASE)


def secret_properties(properties: Mapping[str, str]) -> list[str]:
    """The names among `properties` that carry secrets, or refer to them, sorted (empty: publishable)."""
    return sorted(name for name, value in properties.items()
                  if SECRET_PROPERTY.search(name.lower()) or SECRET_REFERENCE.search(value))


def publishable_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """`properties` for client configuration that anyone reading the ConfigMap sees; refuses secrets."""
    refused = secret_properties(properties)
    if refused:
        raise ValueError(f"configuration properties {', '.join(refused)} carry secrets: they must come from a "
                         "Secret, never from client configuration")
    return dict(properties)
