"""A Glue lake on moto for the Glue backend's tests: its builder, a full dump, and the expected state after a
relocation worked out by hand (rebase only), shared by the relocation and crash tests."""

from __future__ import annotations

import json

from hivecat.locations.prefix import rebase

OLD, NEW = "s3://old-lake/warehouse", "s3://new-lake/warehouse"
PARTITIONS = 250
LOCATION_PARAMS = ("path", "avro.schema.url")


def storage_descriptor(location: str, serde: dict | None = None) -> dict:
    return {"Location": location, "Columns": [{"Name": "v", "Type": "string"}],
            "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                          "Parameters": dict(serde or {})}}


def build_lake(glue) -> None:
    """sales: events (PARTITIONS partitions, location-valued params), dim, tables outside the prefix; other: a
    plain table, an Iceberg and an ACID table, all under OLD."""
    glue.create_database(DatabaseInput={"Name": "sales", "LocationUri": f"{OLD}/sales.db",
                                        "Parameters": {"owner": "team-a"}})
    glue.create_database(DatabaseInput={"Name": "other", "LocationUri": f"{OLD}/other.db"})
    glue.create_table(DatabaseName="sales", TableInput={
        "Name": "events", "TableType": "EXTERNAL_TABLE", "PartitionKeys": [{"Name": "dt", "Type": "string"}],
        "StorageDescriptor": storage_descriptor(f"{OLD}/sales.db/events", {"path": f"{OLD}/sales.db/events",
                                                           "avro.schema.url": f"{OLD}/schemas/events.avsc"}),
        "Parameters": {"path": f"{OLD}/sales.db/events", "comment": f"{OLD}/sales.db/events"}})
    for i in range(PARTITIONS):
        day = f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}"
        glue.create_partition(DatabaseName="sales", TableName="events", PartitionInput={
            "Values": [day], "StorageDescriptor": storage_descriptor(f"{OLD}/sales.db/events/dt={day}"),
            "Parameters": {"path": f"{OLD}/sales.db/events/dt={day}"}})
    glue.create_table(DatabaseName="sales", TableInput={"Name": "dim", "StorageDescriptor": storage_descriptor(f"{OLD}/sales.db/dim")})
    glue.create_table(DatabaseName="sales", TableInput={"Name": "elsewhere",
                                                        "StorageDescriptor": storage_descriptor("s3://other-bucket/elsewhere")})
    glue.create_table(DatabaseName="sales", TableInput={"Name": "near_miss",  # shares the text, not the prefix
                                                        "StorageDescriptor": storage_descriptor(f"{OLD}2/near_miss")})
    glue.create_table(DatabaseName="other", TableInput={"Name": "keep", "StorageDescriptor": storage_descriptor(f"{OLD}/other.db/keep")})
    glue.create_table(DatabaseName="other", TableInput={"Name": "ice", "StorageDescriptor": storage_descriptor(f"{OLD}/other.db/ice"),
                                                        "Parameters": {"table_type": "ICEBERG"}})
    glue.create_table(DatabaseName="other", TableInput={"Name": "acid", "StorageDescriptor": storage_descriptor(f"{OLD}/other.db/acid"),
                                                        "Parameters": {"transactional": "true"}})


def dump(glue) -> dict:
    """Every database, table and partition as stored (less timestamps and versions, which any write bumps)."""
    volatile = {"CreateTime", "UpdateTime", "VersionId", "CreationTime", "LastAccessTime"}

    def clean(obj: dict) -> dict:
        return {k: v for k, v in obj.items() if k not in volatile}
    state: dict = {}
    for db in pages(glue, "get_databases", "DatabaseList"):
        state[db["Name"]] = clean(db)
        for table in pages(glue, "get_tables", "TableList", DatabaseName=db["Name"]):
            state[f"{db['Name']}.{table['Name']}"] = clean(table)
            for part in pages(glue, "get_partitions", "Partitions", DatabaseName=db["Name"], TableName=table["Name"]):
                state[f"{db['Name']}.{table['Name']}/{part['Values']}"] = clean(part)
    return state


def pages(glue, operation: str, key: str, **kwargs) -> list[dict]:
    """Every item a Glue listing returns, over all its pages (Glue pages them, and so does moto 5.2.6)."""
    return [item for page in glue.get_paginator(operation).paginate(**kwargs) for item in page[key]]


def moved(state: dict, keys: set[str]) -> dict:
    """`state` with the relocation applied, by hand, to the objects named in `keys`."""
    expected = json.loads(json.dumps(state, default=str))

    def move(value: str) -> str:
        return rebase(value, OLD, NEW) or value
    for key in keys:
        obj = expected[key]
        if "LocationUri" in obj:
            obj["LocationUri"] = move(obj["LocationUri"])
        sd = obj.get("StorageDescriptor")
        if sd:
            sd["Location"] = move(sd["Location"])
            params = sd["SerdeInfo"].get("Parameters") or {}
            params.update({k: move(v) for k, v in params.items() if k in LOCATION_PARAMS})
        params = obj.get("Parameters") or {}
        params.update({k: move(v) for k, v in params.items() if k in LOCATION_PARAMS})
    return expected


def as_json(state: dict) -> dict:
    return json.loads(json.dumps(state, default=str))
