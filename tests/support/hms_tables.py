"""Hive tables as Thrift objects (hmsclient), for tests that build metastore contents through HMS itself."""

from __future__ import annotations

from hmsclient.genthrift.hive_metastore.ttypes import FieldSchema, SerDeInfo, StorageDescriptor, Table

PARQUET = ("org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
           "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
           "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe")


def storage_descriptor(location: str, serde: dict | None = None) -> StorageDescriptor:
    return StorageDescriptor(cols=[FieldSchema("v", "string", "")], location=location, inputFormat=PARQUET[0],
                             outputFormat=PARQUET[1], compressed=False, numBuckets=-1, bucketCols=[], sortCols=[],
                             serdeInfo=SerDeInfo(serializationLib=PARQUET[2], parameters=dict(serde or {})),
                             parameters={})


def hive_table(db: str, name: str, location: str, *, keys: list[FieldSchema] | None = None,
           params: dict | None = None, serde: dict | None = None) -> Table:
    return Table(tableName=name, dbName=db, owner="hive", sd=storage_descriptor(location, serde), partitionKeys=keys or [],
                 parameters={"EXTERNAL": "TRUE", **(params or {})}, tableType="EXTERNAL_TABLE")
