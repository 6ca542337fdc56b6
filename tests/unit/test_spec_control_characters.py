"""Control characters in any string field of a spec are refused with one line (specs/fields.opt_str): a database
host, user or name, a warehouse URI, a filesystem, an image. Before, a line break in spec.database.host reached
hive-site.xml (and, once the writer refused it, raised a ValueError in the operator: a traceback)."""

from __future__ import annotations

from typing import Any

import pytest

from hivecat.specs.clusterstorage import parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import parse_hive_catalog
from hivecat.specs.tablereplica import parse_table_replica

DATABASE = {"type": "mariadb", "host": "db", "name": "hms", "user": "hive", "passwordSecretRef": {"name": "db"}}


def catalog(**spec: Any) -> Any:
    return parse_hive_catalog({"metadata": {"name": "c", "namespace": "n"}, "spec": spec}, default_image="x")


@pytest.mark.parametrize("spec, field", [
    ({"database": {**DATABASE, "host": "db\n<property>"}}, "spec.database.host"),
    ({"database": {**DATABASE, "user": "hive\t"}}, "spec.database.user"),
    ({"database": {**DATABASE, "name": "h\x00ms"}}, "spec.database.name"),
    ({"database": DATABASE, "metastore": {"warehouseDir": "hdfs://nn/wh\x01"}}, "spec.metastore.warehouseDir"),
    ({"database": DATABASE, "metastore": {"image": "apache/hive:4\r"}}, "spec.metastore.image"),
])
def test_a_control_character_in_a_catalog_field_is_refused(spec: dict, field: str) -> None:
    with pytest.raises(SpecInvalid) as refused:
        catalog(**spec)
    assert refused.value.reason == "InvalidField" and field in refused.value.message
    assert "U+00" in refused.value.message and "\n" not in refused.value.message


def test_other_kinds_too() -> None:
    with pytest.raises(SpecInvalid):
        parse_cluster_storage({"metadata": {"name": "s"}, "spec": {"catalogRef": {"name": "c\n"},
                                                                   "filesystem": "file:///x"}},
                              default_scan_interval=60)
    with pytest.raises(SpecInvalid):
        parse_table_replica({"metadata": {"name": "r"}, "spec": {"catalogRef": {"name": "c"}, "table": "t",
                                                                 "secondaries": ["d"],
                                                                 "partitions": {"filter": "dt = 1\n"}}})


def test_values_that_refer_to_a_secret_are_refused_as_secrets() -> None:
    for value in ("${env.HIVECAT_DB_PASSWORD}", "x${javax.jdo.option.ConnectionPassword}"):
        with pytest.raises(SpecInvalid) as refused:
            catalog(database=DATABASE, configurations=[{"classification": "hive-site",
                                                        "properties": {"hive.custom": value}}])
        assert refused.value.reason == "SecretInConfiguration" and "hive.custom" in refused.value.message
