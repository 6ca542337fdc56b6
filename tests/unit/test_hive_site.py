"""hive-site.xml rendering and the JDBC URLs a metastore connects with."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from hivecat.catalog import hive_site
from hivecat.catalog.hive_site import (MARIADB_DRIVER, POSTGRESQL_DRIVER, JdbcConnection, connection_properties,
                                       hive_site_xml, mariadb_jdbc, postgresql_jdbc)


def parse(xml: str) -> dict[str | None, str | None]:
    return {p.findtext("name"): p.findtext("value") for p in ET.fromstring(xml).iter("property")}


def test_values_with_markup_characters_are_escaped_and_read_back_unchanged() -> None:
    tricky = 'p<&>"\'w </value><value>x'
    xml = hive_site_xml({"javax.jdo.option.ConnectionPassword": tricky, "a&b": "1"})
    assert "<&>" not in xml and '"\'w' not in xml
    assert parse(xml) == {"javax.jdo.option.ConnectionPassword": tricky, "a&b": "1"}


def test_properties_are_sorted_so_the_document_is_stable() -> None:
    assert hive_site_xml({"b": "2", "a": "1"}) == hive_site_xml({"a": "1", "b": "2"})
    assert list(parse(hive_site_xml({"b": "2", "a": "1"}))) == ["a", "b"]


def test_empty_configuration_is_a_valid_document() -> None:
    assert parse(hive_site_xml({})) == {}


def test_mariadb_url_reports_mysql_metadata() -> None:
    assert mariadb_jdbc("db.example", 3306, "hms") == JdbcConnection(
        "jdbc:mysql://db.example:3306/hms?useMysqlMetadata=true", "org.mariadb.jdbc.Driver")
    assert MARIADB_DRIVER == "org.mariadb.jdbc.Driver"


def test_postgresql_url() -> None:
    assert postgresql_jdbc("10.0.0.7", 5432, "metastore") == JdbcConnection(
        "jdbc:postgresql://10.0.0.7:5432/metastore", "org.postgresql.Driver")
    assert POSTGRESQL_DRIVER == "org.postgresql.Driver"


def test_ipv6_hosts_are_bracketed() -> None:
    assert postgresql_jdbc("::1", 5432, "hms").url == "jdbc:postgresql://[::1]:5432/hms"


@pytest.mark.parametrize("name", ["", "hms?allowLoadLocalInfile=true", "a/b", "a b", "hms#x", "hms&x=1"])
def test_database_names_cannot_add_url_parts(name: str) -> None:
    with pytest.raises(ValueError, match="database name"):
        mariadb_jdbc("db", 3306, name)


@pytest.mark.parametrize("host, port", [("", 3306), ("user@db", 3306), ("db/x", 3306), ("db", 0), ("db", 70000)])
def test_bad_hosts_and_ports_are_refused(host: str, port: int) -> None:
    with pytest.raises(ValueError):
        postgresql_jdbc(host, port, "hms")


def test_connection_properties_keep_the_password_out_of_the_url() -> None:
    props = connection_properties(mariadb_jdbc("db", 3306, "hms"), "hive", "s3cret")
    assert props == {
        "javax.jdo.option.ConnectionURL": "jdbc:mysql://db:3306/hms?useMysqlMetadata=true",
        "javax.jdo.option.ConnectionDriverName": "org.mariadb.jdbc.Driver",
        "javax.jdo.option.ConnectionUserName": "hive",
        "javax.jdo.option.ConnectionPassword": "s3cret",
    }
    assert "s3cret" not in props["javax.jdo.option.ConnectionURL"]


@pytest.mark.parametrize("name,secret", [
    ("javax.jdo.option.ConnectionPassword", True),
    ("fs.s3a.secret.key", True),
    ("fs.s3a.access.key", True),
    ("fs.s3a.session.token", True),
    ("fs.azure.account.key.acct.dfs.core.windows.net", True),
    ("ssl.keystore.passwd", True),
    ("hive.metastore.client.factory.class", False),
    ("fs.s3a.aws.credentials.provider", False),  # a class name, not a credential
    ("hive.metastore.warehouse.dir", False),
])
def test_secret_properties_are_not_publishable(name: str, secret: bool) -> None:
    assert hive_site.secret_properties({name: "x", "hive.metastore.uris": "thrift://m:9083"}) == ([name] if secret
                                                                                                  else [])
    if secret:
        with pytest.raises(ValueError, match="carry secrets") as raised:
            hive_site.publishable_properties({name: "hunter2"})
        assert "hunter2" not in str(raised.value)
    else:
        assert hive_site.publishable_properties({name: "x"}) == {name: "x"}


def test_crd_rule_uses_the_same_secret_pattern() -> None:
    """The HiveCatalog CRD refuses these names at admission with the same pattern the renderer uses."""
    from support import crds

    schema = crds.openapi_schema(crds.load_crds()["HiveCatalog"])
    properties = schema["properties"]["spec"]["properties"]["configurations"]["items"]["properties"]["properties"]
    [rule] = [v["rule"] for v in properties["x-kubernetes-validations"]]
    cel_literal = rule.split("matches('", 1)[1].split("')", 1)[0]
    assert cel_literal.replace("\\\\", "\\") == hive_site.SECRET_PROPERTY.pattern
