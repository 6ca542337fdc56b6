"""hive-site.xml rendering and the JDBC URLs a metastore connects with."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hivecat.catalog import hive_site
from hivecat.catalog.hive_site import (MARIADB_DRIVER, POSTGRESQL_DRIVER, JdbcConnection, connection_properties,
                                       hive_site_xml, mariadb_jdbc, postgresql_jdbc)


REPO = Path(__file__).resolve().parents[2]


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


def crd_properties_rules() -> list[str]:
    """The CEL rules on a HiveCatalog configuration's properties map."""
    from support import crds

    schema = crds.openapi_schema(crds.load_crds()["HiveCatalog"])
    properties = schema["properties"]["spec"]["properties"]["configurations"]["items"]["properties"]["properties"]
    return [v["rule"] for v in properties["x-kubernetes-validations"]]


def cel_regexes(rule: str) -> list[str]:
    """The regular expressions of a rule's matches('...') calls, as RE2 gets them (CEL unescapes \\\\)."""
    return [literal.replace("\\\\", "\\") for literal in re.findall(r"matches\('((?:[^'\\\\]|\\\\.)*)'\)", rule)]


def test_crd_rule_uses_the_same_secret_pattern() -> None:
    """The HiveCatalog CRD refuses these names at admission with the same pattern the renderer uses."""
    [rule] = [r for r in crd_properties_rules() if "lowerAscii" in r]
    assert cel_regexes(rule) == [hive_site.SECRET_PROPERTY.pattern]


def test_crd_rule_refuses_the_same_control_characters_in_names_and_values() -> None:
    [rule] = [r for r in crd_properties_rules() if "x00" in r]
    assert cel_regexes(rule) == [hive_site.CONTROL_CHARACTER.pattern] * 2
    assert "!k.matches(" in rule and "!self[k].matches(" in rule  # the names, then the values


def test_the_bad_cr_for_admission_trips_this_rule_and_no_other() -> None:
    """tests/operator/test_admission.py feeds it to the API server; here, the CRD's two regexes on it offline."""
    import yaml

    path = REPO / "tests" / "operator" / "bad_crs" / "hc-control-character-in-configuration.yaml"
    [configuration] = yaml.safe_load(path.read_text())["spec"]["configurations"]
    properties = configuration["properties"]
    assert hive_site.control_character(properties) is not None and hive_site.secret_properties(properties) == []


# --- control characters: C0 (tab, CR, LF included) and DEL -------------------------------------------------

CONTROL = {"NUL": "\x00", "SOH": "\x01", "TAB": "\t", "LF": "\n", "CR": "\r", "ESC": "\x1b", "US": "\x1f",
           "DEL": "\x7f"}


def test_the_class_is_exactly_c0_and_del() -> None:
    assert [c for c in map(chr, range(0x110000)) if hive_site.CONTROL_CHARACTER.search(c)] == \
        [chr(c) for c in range(0x20)] + ["\x7f"]


@pytest.mark.parametrize("part", ["name", "value"])
@pytest.mark.parametrize("character", CONTROL.values(), ids=CONTROL)
def test_the_writer_refuses_control_characters(character: str, part: str) -> None:
    properties = {"a": "1", f"b{character}" if part == "name" else "b": f"x{character}y" if part == "value" else "2"}
    with pytest.raises(ValueError, match=f"hive-site.xml: the {part} of property .* U\\+{ord(character):04X}") as raised:
        hive_site_xml(properties)
    assert "\n" not in str(raised.value) and "x" + character not in str(raised.value)


def test_unicode_quotes_and_markup_round_trip() -> None:
    properties = {"hive.metastore.warehouse.dir": "s3a://dépôt/仓库 <&> \"q\" 'q' ${x}",
                  "naïve.名前": "\u00a0\u2028\U0001F600 ]]> &amp;"}
    assert parse(hive_site_xml(properties)) == properties
