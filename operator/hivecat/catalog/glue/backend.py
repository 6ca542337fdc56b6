"""AWS Glue Data Catalog reads and writes for the shared relocation driver, within AWS's documented limits.

moto ignores MaxResults, Segment and batch limits, so the limits are enforced here, not trusted to the
service: GetDatabases/GetTables/GetUserDefinedFunctions pages of at most 100, GetPartitions pages of at most
1000 (optionally in parallel Segments, 1..10), BatchGetPartition at most 1000 keys, BatchUpdatePartition at
most 100 entries, whose per-entry Errors are returned, never dropped.

Race window (see docs/relocate-consistency.md): Glue has no transactions. UpdateTable carries the VersionId
read just before, so a concurrent table change makes it fail (conflicted). Partitions, databases and
functions have no version: a change landing between our re-read and our write (milliseconds) is
overwritten by the whole object we write.
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import botocore.session
from botocore.exceptions import ClientError

from hivecat.catalog.api.backend import WriteRejected
from hivecat.catalog.api.objects import DATABASE, FUNCTION, PARTITION, TABLE, ObjectRef, Place, StorageFields
from hivecat.catalog.model import DatabaseInfo, ObjectKind, PartitionInfo, TableInfo
from hivecat.locations.filter_glue import to_glue_expression
from hivecat.locations.partition_filter import Expr, FilterError

MAX_DATABASES_PAGE = MAX_TABLES_PAGE = MAX_FUNCTIONS_PAGE = 100
MAX_PARTITIONS_PAGE = 1000
MAX_BATCH_GET = 1000
MAX_BATCH_UPDATE = 100
MAX_SEGMENTS = 10
# Error codes that mean "the object changed or vanished under us": conflicted, not failed.
CONFLICT_CODES = frozenset({"ConcurrentModificationException", "EntityNotFoundException"})
UNPROCESSED_RETRIES = 5

_STORAGE = StorageFields("StorageDescriptor", "Location", "SerdeInfo", "Parameters", "SkewedInfo",
                         "SkewedColumnValueLocationMaps", "Parameters")

PLACES: dict[str, tuple[Place, ...]] = {
    DATABASE: (Place(ObjectKind.DATABASE, ("LocationUri",)),),
    TABLE: _STORAGE.places(ObjectKind.TABLE, ObjectKind.TABLE_PARAM),
    PARTITION: _STORAGE.places(ObjectKind.PARTITION, ObjectKind.PARTITION_PARAM),
    FUNCTION: (Place(ObjectKind.FUNCTION_RESOURCE, ("ResourceUris",), "list", "Uri"),),
}


@functools.lru_cache(maxsize=1)
def _glue_model():
    return botocore.session.get_session().get_service_model("glue")


def _fit(value: Any, shape) -> Any:
    """`value` reduced to what `shape` accepts, recursively: GetTable's Table carries read-only fields
    (CreateTime, VersionId, CatalogId, DatabaseName, IsRegisteredWithLakeFormation, ...) that TableInput
    rejects, and some nested shapes differ (ViewDefinition vs ViewDefinitionInput)."""
    if value is None:
        return None
    if shape.type_name == "structure":
        return {key: _fit(item, shape.members[key]) for key, item in value.items()
                if key in shape.members and item is not None}
    if shape.type_name == "list":
        return [_fit(item, shape.member) for item in value]
    if shape.type_name == "map":
        return {key: _fit(item, shape.value) for key, item in value.items()}
    return value


def as_input(value: dict, shape_name: str) -> dict:
    """The *Input structure (TableInput, PartitionInput, DatabaseInput, ...) for an object as read."""
    return _fit(value, _glue_model().shape_for(shape_name))


def _rejection(exc: ClientError) -> WriteRejected:
    error = exc.response.get("Error", {})
    code = error.get("Code", "")
    return WriteRejected(f"{code}: {error.get('Message', '')}", conflict=code in CONFLICT_CODES)


class GlueBackend:
    places = PLACES
    parallelism = 1  # one chunk at a time: parallel chunk writes are made and measured for Thrift only

    def __init__(self, client: Any, name: str, *, catalog_id: str | None = None, segments: int = 1,
                 batch_size: int = MAX_BATCH_UPDATE, functions: bool = True):
        if not 1 <= segments <= MAX_SEGMENTS:
            raise ValueError(f"segments must be 1..{MAX_SEGMENTS} (GetPartitions TotalSegments)")
        if not 1 <= batch_size <= MAX_BATCH_UPDATE:
            raise ValueError(f"batch size must be 1..{MAX_BATCH_UPDATE} (BatchUpdatePartition entries)")
        self.client = client
        self.name = name
        self.segments = segments
        self.batch_size = batch_size
        self.functions = functions
        self._catalog = {"CatalogId": catalog_id} if catalog_id else {}

    # --- reads ---------------------------------------------------------------------------------------

    def _pages(self, method: str, key: str, limit: int, **kwargs: Any) -> Iterator[dict]:
        """Every item of a paginated call, following NextToken, asking for at most `limit` per page."""
        kwargs = {**self._catalog, **kwargs, "MaxResults": limit}
        while True:
            page = getattr(self.client, method)(**kwargs)
            yield from page.get(key) or ()
            token = page.get("NextToken")
            if not token:
                return
            kwargs["NextToken"] = token

    def _get(self, method: str, key: str, **kwargs: Any) -> dict | None:
        try:
            return getattr(self.client, method)(**self._catalog, **kwargs)[key]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "EntityNotFoundException":
                return None
            raise

    def get_databases(self) -> Iterator[dict]:
        return self._pages("get_databases", "DatabaseList", MAX_DATABASES_PAGE)

    def get_database(self, name: str) -> dict | None:
        return self._get("get_database", "Database", Name=name)

    def get_tables(self, database: str) -> Iterator[dict]:
        return self._pages("get_tables", "TableList", MAX_TABLES_PAGE, DatabaseName=database)

    def get_table(self, database: str, name: str) -> dict | None:
        return self._get("get_table", "Table", DatabaseName=database, Name=name)

    def get_partitions(self, database: str, table: dict, expr: Expr | None) -> Iterator[dict]:
        kwargs: dict[str, Any] = {"DatabaseName": database, "TableName": table["Name"]}
        if expr is not None:
            try:
                kwargs["Expression"] = to_glue_expression(expr)
            except FilterError:
                pass  # not expressible safely in Glue: fetch all, the driver filters
        if self.segments == 1:
            yield from self._pages("get_partitions", "Partitions", MAX_PARTITIONS_PAGE, **kwargs)
            return

        def segment(number: int) -> list[dict]:
            return list(self._pages("get_partitions", "Partitions", MAX_PARTITIONS_PAGE, **kwargs,
                                    Segment={"SegmentNumber": number, "TotalSegments": self.segments}))
        with ThreadPoolExecutor(self.segments) as pool:
            for part in pool.map(segment, range(self.segments)):
                yield from part

    def reread_partitions(self, database: str, table: str,
                          values: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], dict]:
        found: dict[tuple[str, ...], dict] = {}
        for start in range(0, len(values), MAX_BATCH_GET):
            keys = [{"Values": list(v)} for v in values[start:start + MAX_BATCH_GET]]
            for attempt in range(UNPROCESSED_RETRIES + 1):
                try:
                    answer = self.client.batch_get_partition(**self._catalog, DatabaseName=database,
                                                             TableName=table, PartitionsToGet=keys)
                except ClientError as exc:
                    if exc.response.get("Error", {}).get("Code") == "EntityNotFoundException":
                        return {}  # the table is gone: every partition of it is
                    raise
                found.update({tuple(p["Values"]): p for p in answer.get("Partitions") or ()})
                keys = answer.get("UnprocessedKeys") or []
                if not keys:
                    break
                time.sleep(0.1 * 2 ** attempt)
            else:
                raise RuntimeError(f"Glue left {len(keys)} partitions of {database}.{table} unprocessed "
                                   f"after {UNPROCESSED_RETRIES} retries; rerun to resume")
        return found

    def get_functions(self, database: str) -> Iterator[dict]:
        if not self.functions:
            return iter(())
        return self._pages("get_user_defined_functions", "UserDefinedFunctions", MAX_FUNCTIONS_PAGE,
                           DatabaseName=database, Pattern="*")

    def get_function(self, database: str, name: str) -> dict | None:
        return self._get("get_user_defined_function", "UserDefinedFunction", DatabaseName=database,
                         FunctionName=name)

    # --- what the objects say ------------------------------------------------------------------------

    def database_info(self, raw: dict) -> DatabaseInfo:
        return DatabaseInfo(raw["Name"], raw.get("LocationUri"), None, dict(raw.get("Parameters") or {}))

    def table_info(self, database: str, raw: dict) -> TableInfo:
        sd = raw.get("StorageDescriptor") or {}
        return TableInfo(database, raw["Name"], sd.get("Location"), raw.get("TableType"),
                         tuple(k["Name"] for k in raw.get("PartitionKeys") or ()), dict(raw.get("Parameters") or {}),
                         dict((sd.get("SerdeInfo") or {}).get("Parameters") or {}))

    def partition_key_types(self, table: dict) -> dict[str, str]:
        return {k["Name"]: k.get("Type") or "string" for k in table.get("PartitionKeys") or ()}

    def partition_info(self, database: str, table: str, raw: dict) -> PartitionInfo:
        return PartitionInfo(database, table or raw.get("TableName", ""), tuple(raw.get("Values") or ()),
                             (raw.get("StorageDescriptor") or {}).get("Location"), dict(raw.get("Parameters") or {}))

    def function_name(self, raw: dict) -> str:
        return raw["FunctionName"]

    def with_params(self, raw: dict, params: dict[str, str]) -> dict:
        new = copy.deepcopy(raw)
        new["Parameters"] = dict(params)
        return new

    # --- writes --------------------------------------------------------------------------------------

    def write(self, ref: ObjectRef, new: dict, old: dict) -> None:
        try:
            if ref.type == DATABASE:
                self.client.update_database(**self._catalog, Name=ref.database,
                                            DatabaseInput=as_input(new, "DatabaseInput"))
            elif ref.type == TABLE:
                # VersionId: Glue refuses the update if the table changed since we read it.
                version = {"VersionId": old["VersionId"]} if old.get("VersionId") else {}
                self.client.update_table(**self._catalog, DatabaseName=ref.database,
                                         TableInput=as_input(new, "TableInput"), **version)
            elif ref.type == FUNCTION:
                self.client.update_user_defined_function(
                    **self._catalog, DatabaseName=ref.database, FunctionName=ref.name,
                    FunctionInput=as_input(new, "UserDefinedFunctionInput"))
            else:
                raise ValueError(f"write partitions with write_partitions, not {ref}")
        except ClientError as exc:
            raise _rejection(exc) from None

    def write_partitions(self, database: str, table: str,
                         partitions: Sequence[dict]) -> dict[tuple[str, ...], WriteRejected]:
        rejected: dict[tuple[str, ...], WriteRejected] = {}
        for start in range(0, len(partitions), self.batch_size):
            batch = partitions[start:start + self.batch_size]
            entries = [{"PartitionValueList": list(p["Values"]), "PartitionInput": as_input(p, "PartitionInput")}
                       for p in batch]
            try:
                answer = self.client.batch_update_partition(**self._catalog, DatabaseName=database,
                                                            TableName=table, Entries=entries)
            except ClientError as exc:
                rejection = _rejection(exc)
                rejected.update({tuple(p["Values"]): rejection for p in batch})
                continue
            for error in answer.get("Errors") or ():
                detail = error.get("ErrorDetail") or {}
                code = detail.get("ErrorCode", "")
                rejected[tuple(error.get("PartitionValueList") or ())] = WriteRejected(
                    f"{code}: {detail.get('ErrorMessage', '')}", conflict=code in CONFLICT_CODES)
        return rejected
