"""A small in-memory Glue client that enforces what moto does not: AWS's MaxResults and batch limits,
NextToken paging (in small pages), Segment, table VersionId checks, per-entry BatchUpdatePartition Errors,
and boto3's own request validation (unknown fields such as VersionId or CreateTime in a TableInput are
rejected, as AWS does). Method names and shapes are boto3's, so GlueCatalog(client=FakeGlue()) runs unchanged.

Hooks let a test act in the middle of a run: `before[op]` is called with the request before it is served.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections import defaultdict
from collections.abc import Callable

import botocore.session
from botocore.exceptions import ClientError
from botocore.validate import validate_parameters

LIMITS = {"GetDatabases": 100, "GetTables": 100, "GetPartitions": 1000, "GetUserDefinedFunctions": 100}
_MODEL = botocore.session.get_session().get_service_model("glue")


def error(code: str, message: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


class FakeGlue:
    def __init__(self, page_size: int = 7):
        self.page_size = page_size
        self.databases: dict[str, dict] = {}
        self.tables: dict[tuple[str, str], dict] = {}
        self.versions: dict[tuple[str, str], int] = {}
        self.partitions: dict[tuple[str, str], dict[tuple[str, ...], dict]] = defaultdict(dict)
        self.functions: dict[tuple[str, str], dict] = {}
        self.calls: list[tuple[str, dict]] = []
        self.before: dict[str, Callable[[dict], None]] = {}
        self.entry_errors: dict[tuple[str, ...], str] = {}   # partition values -> ErrorCode in BatchUpdatePartition

    # --- plumbing ----------------------------------------------------------------------------------

    def _call(self, operation: str, params: dict) -> None:
        validate_parameters(params, _MODEL.operation_model(operation).input_shape)  # boto3's own check
        if operation in LIMITS and params.get("MaxResults", 0) > LIMITS[operation]:
            raise error("InvalidInputException", f"MaxResults above {LIMITS[operation]}", operation)
        self.calls.append((operation, copy.deepcopy(params)))
        hook = self.before.get(operation)
        if hook is not None:
            hook(params)

    def _page(self, items: list, params: dict, key: str) -> dict:
        start = int(params.get("NextToken") or 0)
        size = min(self.page_size, params.get("MaxResults") or self.page_size)
        answer = {key: copy.deepcopy(items[start:start + size])}
        if start + size < len(items):
            answer["NextToken"] = str(start + size)
        return answer

    @staticmethod
    def _found(store: dict, key, operation: str) -> dict:
        if key not in store:
            raise error("EntityNotFoundException", f"{key} not found", operation)
        return copy.deepcopy(store[key])

    def writes(self) -> list[str]:
        return [op for op, _ in self.calls if op.startswith(("Update", "Batch", "Create", "Delete"))
                and op not in ("BatchGetPartition",)]

    # --- setup (not Glue calls) ---------------------------------------------------------------------

    def add_database(self, name: str, location: str | None = None) -> None:
        self.databases[name] = {"Name": name, **({"LocationUri": location} if location else {}),
                                "CreateTime": dt.datetime(2026, 1, 1), "CatalogId": "123456789012"}

    def add_table(self, db: str, name: str, location: str, *, keys: dict[str, str] | None = None,
                  params: dict | None = None, serde: dict | None = None, skewed: dict | None = None) -> None:
        sd = {"Location": location, "SerdeInfo": {"Parameters": dict(serde or {})}}
        if skewed:
            sd["SkewedInfo"] = {"SkewedColumnNames": ["c"], "SkewedColumnValueLocationMaps": dict(skewed)}
        self.tables[(db, name)] = {
            "Name": name, "DatabaseName": db, "StorageDescriptor": sd, "TableType": "EXTERNAL_TABLE",
            "PartitionKeys": [{"Name": k, "Type": t} for k, t in (keys or {}).items()],
            "Parameters": dict(params or {}), "CreateTime": dt.datetime(2026, 1, 1), "CatalogId": "123456789012",
            "IsRegisteredWithLakeFormation": False}
        self.versions[(db, name)] = 1

    def add_partition(self, db: str, table: str, values: tuple[str, ...], location: str,
                      params: dict | None = None) -> None:
        self.partitions[(db, table)][values] = {
            "Values": list(values), "DatabaseName": db, "TableName": table,
            "StorageDescriptor": {"Location": location, "SerdeInfo": {"Parameters": {}}},
            "Parameters": dict(params or {}), "CreationTime": dt.datetime(2026, 1, 1), "CatalogId": "123456789012"}

    def add_function(self, db: str, name: str, uris: list[str]) -> None:
        self.functions[(db, name)] = {"FunctionName": name, "DatabaseName": db, "ClassName": "x.Udf",
                                      "OwnerName": "hive", "OwnerType": "USER", "CatalogId": "123456789012",
                                      "ResourceUris": [{"ResourceType": "JAR", "Uri": u} for u in uris]}

    def state(self) -> dict:
        """Everything stored (for before/after comparisons), without version counters."""
        return copy.deepcopy({"databases": self.databases, "tables": self.tables,
                              "partitions": dict(self.partitions), "functions": self.functions})

    # --- reads --------------------------------------------------------------------------------------

    def get_databases(self, **params):
        self._call("GetDatabases", params)
        return self._page(list(self.databases.values()), params, "DatabaseList")

    def get_database(self, **params):
        self._call("GetDatabase", params)
        return {"Database": self._found(self.databases, params["Name"], "GetDatabase")}

    def _table(self, db: str, name: str) -> dict:
        table = copy.deepcopy(self.tables[(db, name)])
        table["VersionId"] = str(self.versions[(db, name)])
        return table

    def get_tables(self, **params):
        self._call("GetTables", params)
        if params["DatabaseName"] not in self.databases:
            raise error("EntityNotFoundException", "no database", "GetTables")
        tables = [self._table(db, name) for db, name in self.tables if db == params["DatabaseName"]]
        return self._page(tables, params, "TableList")

    def get_table(self, **params):
        self._call("GetTable", params)
        key = (params["DatabaseName"], params["Name"])
        self._found(self.tables, key, "GetTable")
        return {"Table": self._table(*key)}

    def get_partitions(self, **params):
        self._call("GetPartitions", params)
        parts = list(self.partitions[(params["DatabaseName"], params["TableName"])].values())
        segment = params.get("Segment")
        if segment:  # a stable split: partition i belongs to segment i mod total
            parts = [p for i, p in enumerate(parts) if i % segment["TotalSegments"] == segment["SegmentNumber"]]
        return self._page(parts, params, "Partitions")  # Expression is recorded, not evaluated: a superset

    def batch_get_partition(self, **params):
        self._call("BatchGetPartition", params)
        if len(params["PartitionsToGet"]) > 1000:
            raise error("InvalidInputException", "more than 1000 keys", "BatchGetPartition")
        table = self.partitions[(params["DatabaseName"], params["TableName"])]
        found = [copy.deepcopy(table[tuple(k["Values"])]) for k in params["PartitionsToGet"]
                 if tuple(k["Values"]) in table]
        return {"Partitions": found, "UnprocessedKeys": []}

    def get_user_defined_functions(self, **params):
        self._call("GetUserDefinedFunctions", params)
        funcs = [f for (db, _), f in self.functions.items() if db == params["DatabaseName"]]
        return self._page(funcs, params, "UserDefinedFunctions")

    def get_user_defined_function(self, **params):
        self._call("GetUserDefinedFunction", params)
        key = (params["DatabaseName"], params["FunctionName"])
        return {"UserDefinedFunction": self._found(self.functions, key, "GetUserDefinedFunction")}

    # --- writes -------------------------------------------------------------------------------------

    def update_database(self, **params):
        self._call("UpdateDatabase", params)
        db = self.databases[params["Name"]]
        self.databases[params["Name"]] = {**{k: db[k] for k in ("CreateTime", "CatalogId")},
                                          **copy.deepcopy(params["DatabaseInput"])}
        return {}

    def update_table(self, **params):
        self._call("UpdateTable", params)
        key = (params["DatabaseName"], params["TableInput"]["Name"])
        if key not in self.tables:
            raise error("EntityNotFoundException", "no table", "UpdateTable")
        if "VersionId" in params and params["VersionId"] != str(self.versions[key]):
            raise error("ConcurrentModificationException", "version mismatch", "UpdateTable")
        old = self.tables[key]
        self.tables[key] = {**{k: old[k] for k in ("DatabaseName", "CreateTime", "CatalogId",
                                                    "IsRegisteredWithLakeFormation")},
                            **copy.deepcopy(params["TableInput"])}
        self.versions[key] += 1
        return {}

    def batch_update_partition(self, **params):
        self._call("BatchUpdatePartition", params)
        if len(params["Entries"]) > 100:
            raise error("InvalidInputException", "more than 100 entries", "BatchUpdatePartition")
        table = self.partitions[(params["DatabaseName"], params["TableName"])]
        errors = []
        for entry in params["Entries"]:
            values = tuple(entry["PartitionValueList"])
            code = self.entry_errors.get(values) or (None if values in table else "EntityNotFoundException")
            if code:
                errors.append({"PartitionValueList": list(values),
                               "ErrorDetail": {"ErrorCode": code, "ErrorMessage": "injected"}})
                continue
            old = table[values]
            table[values] = {**{k: old[k] for k in ("DatabaseName", "TableName", "CreationTime", "CatalogId")},
                             **copy.deepcopy(entry["PartitionInput"])}
        return {"Errors": errors} if errors else {}

    def update_user_defined_function(self, **params):
        self._call("UpdateUserDefinedFunction", params)
        key = (params["DatabaseName"], params["FunctionName"])
        old = self.functions[key]
        self.functions[key] = {**{k: old[k] for k in ("DatabaseName", "CatalogId")},
                               **copy.deepcopy(params["FunctionInput"])}
        return {}
