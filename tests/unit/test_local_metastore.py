"""The pieces of the local HMS launcher that need no JVM."""

from __future__ import annotations

import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.local.metastore import MetastoreDatabase, MetastoreServer, hive_site_xml
from hivecat.local.scratch_db import create_database
from hivecat.local.txn_tables import _metadata


def test_hive_site_xml_escapes_values() -> None:
    xml = hive_site_xml({"javax.jdo.option.ConnectionPassword": "p<&>\"'w", "a": "1"})
    props = {p.findtext("name"): p.findtext("value") for p in ET.fromstring(xml).iter("property")}
    assert props == {"javax.jdo.option.ConnectionPassword": "p<&>\"'w", "a": "1"}


def test_mariadb_jdbc_url_uses_mysql_metadata_and_keeps_password_out_of_repr() -> None:
    db = MetastoreDatabase.mariadb("127.0.0.1", 3306, "hms", "hivecat", "s3cret")
    assert db.jdbc_url == "jdbc:mysql://127.0.0.1:3306/hms?useMysqlMetadata=true"
    assert db.driver == "org.mariadb.jdbc.Driver"
    assert "s3cret" not in repr(db)
    assert sa.make_url(db.sqlalchemy_url).password == "s3cret"


def test_conf_dir_is_private_and_has_required_settings(tmp_path: Path) -> None:
    db = MetastoreDatabase.mariadb("127.0.0.1", 3306, "hms", "hivecat", "s3cret")
    server = MetastoreServer(db, tmp_path, "file:///wh", port=1)
    site = server.write_conf_dir() / "hive-site.xml"
    assert stat.S_IMODE(site.stat().st_mode) == 0o600
    props = {p.findtext("name"): p.findtext("value") for p in ET.fromstring(site.read_text()).iter("property")}
    assert props["datanucleus.autoStartMechanism"] == "MetaData"
    assert props["datanucleus.autoStartMetaDataFiles"] == "package.jdo"
    assert props["hive.metastore.schema.verification"] == "false"
    assert props["datanucleus.connectionPoolingType"] == "HikariCP"
    assert "s3cret" not in " ".join(server.command())  # never on the command line


def test_command_runs_hms_main_class_on_spark_jars(tmp_path: Path) -> None:
    server = MetastoreServer(MetastoreDatabase.derby(tmp_path / "db"), tmp_path, "file:///wh", port=9999)
    command = server.command()
    classpath = command[command.index("-cp") + 1]
    assert command[-3:] == ["org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", "9999"]
    assert classpath.startswith(str(tmp_path / "conf"))
    assert any(Path(entry).parent.glob("hive-metastore-2.3.*.jar") for entry in classpath.split(":") if entry.endswith("*"))


@pytest.mark.parametrize("dialect,expected", [("mysql", "TXN_COMPONENTS"), ("postgresql", "txn_components")])
def test_transaction_table_names_follow_how_hms_queries_them(dialect: str, expected: str) -> None:
    metadata, counters = _metadata(dialect)
    assert expected in metadata.tables
    assert len(metadata.tables) == 11 and len(counters) == 3


@pytest.mark.parametrize("name", ["", "Upper", "x;drop", "a" * 64, "1abc"])
def test_scratch_database_names_are_whitelisted(name: str) -> None:
    with pytest.raises(ValueError, match="invalid scratch database name"):
        create_database("mysql+pymysql://u:p@127.0.0.1:1", name)
