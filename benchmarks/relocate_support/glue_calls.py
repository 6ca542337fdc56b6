"""Glue API calls of one hivecat relocation, counted with botocore's event hooks on a moto server.

moto answers like Glue but ignores its batch limits, so the count says what hivecat asks for, which is
what AWS bills and throttles: at most 100 partitions per BatchUpdatePartition.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from hivecat.catalog.model import RelocationRequest
from hivecat.local.moto import moto_server

REGION = "us-east-1"
OLD_ROOT = "s3://old-lake/warehouse"
NEW_ROOT = "s3://new-lake/warehouse"
DATABASE, TABLE = "bench", "events"
WRITES = {"UpdateTable", "UpdateDatabase", "BatchUpdatePartition", "UpdatePartition", "UpdateUserDefinedFunction"}
GLUE_BATCH = 100  # partitions per BatchCreatePartition / BatchUpdatePartition (AWS limit)


def _partition_location(i: int) -> str:
    return f"{OLD_ROOT}/{DATABASE}.db/{TABLE}/n={i}"


def _fill(client, partitions: int) -> None:
    sd = {"Columns": [{"Name": "id", "Type": "bigint"}], "Location": f"{OLD_ROOT}/{DATABASE}.db/{TABLE}",
          "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
          "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
          "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"}}
    client.create_database(DatabaseInput={"Name": DATABASE, "LocationUri": f"{OLD_ROOT}/{DATABASE}.db"})
    client.create_table(DatabaseName=DATABASE, TableInput={
        "Name": TABLE, "TableType": "EXTERNAL_TABLE", "StorageDescriptor": sd,
        "PartitionKeys": [{"Name": "n", "Type": "int"}], "Parameters": {"EXTERNAL": "TRUE"}})
    for start in range(0, partitions, GLUE_BATCH):
        inputs = [{"Values": [str(i)], "StorageDescriptor": {**sd, "Location": _partition_location(i)},
                   "Parameters": {"numFiles": "1"}} for i in range(start, min(start + GLUE_BATCH, partitions))]
        answer = client.batch_create_partition(DatabaseName=DATABASE, TableName=TABLE, PartitionInputList=inputs)
        if answer.get("Errors"):
            raise RuntimeError(f"moto refused partitions: {answer['Errors'][:3]}")


def _verify(client, partitions: int) -> None:
    moved = {}
    for page in client.get_paginator("get_partitions").paginate(DatabaseName=DATABASE, TableName=TABLE):
        moved.update({int(p["Values"][0]): p["StorageDescriptor"]["Location"] for p in page["Partitions"]})
    expected = {i: NEW_ROOT + _partition_location(i)[len(OLD_ROOT):] for i in range(partitions)}
    wrong = [i for i in expected if moved.get(i) != expected[i]]
    table = client.get_table(DatabaseName=DATABASE, Name=TABLE)["Table"]["StorageDescriptor"]["Location"]
    database = client.get_database(Name=DATABASE)["Database"]["LocationUri"]
    if wrong or len(moved) != partitions or not table.startswith(NEW_ROOT) or not database.startswith(NEW_ROOT):
        raise AssertionError(f"Glue relocation left a wrong result: {len(moved)} partitions, {len(wrong)} not moved "
                             f"(e.g. {[moved.get(i) for i in wrong[:3]]}), table at {table}, database at {database}")


def _glue_catalog_class():
    try:
        from hivecat.catalog.glue import GlueCatalog
    except ImportError as exc:
        raise RuntimeError(f"the Glue part needs hivecat.catalog.glue.GlueCatalog, which is not there ({exc})") from exc
    return GlueCatalog


@dataclass(frozen=True)
class GlueCalls:
    partitions: int
    calls: Counter  # operation name -> count, during relocate() only

    @property
    def writes(self) -> int:
        return sum(n for op, n in self.calls.items() if op in WRITES)

    @property
    def batches(self) -> int:
        """The fewest BatchUpdatePartition calls that can move the partitions."""
        return math.ceil(self.partitions / GLUE_BATCH)


def count_glue_calls(workdir: Path, partitions: int) -> GlueCalls:
    glue_catalog = _glue_catalog_class()
    import boto3

    # Credentials that can only ever reach the local moto server.
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": REGION})
    os.environ.pop("AWS_PROFILE", None)
    with moto_server(workdir / "moto.log") as endpoint:
        client = boto3.client("glue", region_name=REGION, endpoint_url=endpoint)
        _fill(client, partitions)
        # moto has no user-defined-function API (GetUserDefinedFunctions answers 500): functions stay out.
        catalog = glue_catalog(REGION, endpoint_url=endpoint, journal_url=f"sqlite:///{workdir / 'glue-journal.db'}",
                               functions=False)
        calls: Counter = Counter()
        catalog.client.meta.events.register(
            "before-call.glue", lambda model, **kwargs: calls.update([model.name]))
        try:
            report = catalog.relocate(RelocationRequest(OLD_ROOT, NEW_ROOT))
        finally:
            catalog.close()
        if report.conflicted:
            raise AssertionError(f"GlueCatalog reported {report.conflicted} conflicts on data nobody else touched")
        _verify(client, partitions)
    return GlueCalls(partitions, calls)
