"""An in-memory ApiBackend for the shared API relocation driver, safe to call from several threads.

One database with one partitioned table; every object keeps its location under "location". Each write call
sleeps `pause` seconds (so chunks overlap when the driver runs several at once) and is counted per
partition. `fail_write(n)` makes the n-th write_partitions call (1-based) store its batch and then raise
LostReply, as a connection that dies before the answer arrives.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from hivecat.catalog.api.backend import WriteRejected
from hivecat.catalog.api.objects import DATABASE, FUNCTION, PARTITION, TABLE, ObjectRef, Place
from hivecat.catalog.model import DatabaseInfo, ObjectKind, PartitionInfo, TableInfo
from hivecat.locations.partition_filter import Expr

PLACES: dict[str, tuple[Place, ...]] = {
    DATABASE: (Place(ObjectKind.DATABASE, ("location",)),),
    TABLE: (Place(ObjectKind.TABLE, ("location",)),),
    PARTITION: (Place(ObjectKind.PARTITION, ("location",)),),
    FUNCTION: (),
}


class LostReply(ConnectionError):
    """The write reached the service; its answer never came back."""


class FakeApiBackend:
    places = PLACES

    def __init__(self, root: str, partitions: int, *, batch_size: int, parallelism: int, pause: float = 0.0):
        self.name = "fake://catalog"
        self.batch_size = batch_size
        self.parallelism = parallelism
        self.pause = pause
        self.lock = threading.Lock()
        self.database = {"name": "db", "location": f"{root}/db.db"}
        self.table = {"name": "t", "location": f"{root}/db.db/t", "keys": ["n"]}
        self.partitions = {(str(n),): {"values": [str(n)], "location": f"{root}/db.db/t/n={n}"}
                           for n in range(partitions)}
        self.writes: Counter[tuple[str, ...]] = Counter()  # partition values -> times written
        self.rejected: dict[tuple[str, ...], WriteRejected] = {}
        self.write_calls = 0
        self.failing_call: int | None = None

    def fail_write(self, call: int | None) -> None:
        self.failing_call = call

    def locations(self) -> dict[tuple[str, ...], str]:
        with self.lock:
            return {values: p["location"] for values, p in self.partitions.items()}

    # --- reads ---------------------------------------------------------------------------------------

    def get_databases(self) -> Iterator[Any]:
        yield self.get_database("db")

    def get_database(self, name: str) -> Any | None:
        with self.lock:
            return copy.deepcopy(self.database) if name == "db" else None

    def get_tables(self, database: str) -> Iterator[Any]:
        yield self.get_table(database, "t")

    def get_table(self, database: str, name: str) -> Any | None:
        with self.lock:
            return copy.deepcopy(self.table) if (database, name) == ("db", "t") else None

    def get_partitions(self, database: str, table: Any, expr: Expr | None) -> Iterator[Any]:
        with self.lock:
            found = copy.deepcopy(list(self.partitions.values()))
        yield from found

    def reread_partitions(self, database: str, table: str,
                          values: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], Any]:
        with self.lock:
            return {v: copy.deepcopy(self.partitions[v]) for v in values if v in self.partitions}

    def get_functions(self, database: str) -> Iterator[Any]:
        return iter(())

    def get_function(self, database: str, name: str) -> Any | None:
        return None

    # --- what the objects say ------------------------------------------------------------------------

    def database_info(self, raw: Any) -> DatabaseInfo:
        return DatabaseInfo(raw["name"], raw["location"], None, {})

    def table_info(self, database: str, raw: Any) -> TableInfo:
        return TableInfo(database, raw["name"], raw["location"], "EXTERNAL_TABLE", tuple(raw["keys"]), {}, {})

    def partition_key_types(self, table: Any) -> dict[str, str]:
        return {key: "int" for key in table["keys"]}

    def partition_info(self, database: str, table: str, raw: Any) -> PartitionInfo:
        return PartitionInfo(database, table, tuple(raw["values"]), raw["location"], {})

    def function_name(self, raw: Any) -> str:
        raise AssertionError("the fake has no functions")

    def with_params(self, raw: Any, params: dict[str, str]) -> Any:
        raise AssertionError("not used by relocation")

    # --- writes --------------------------------------------------------------------------------------

    def write(self, ref: ObjectRef, new: Any, old: Any) -> None:
        time.sleep(self.pause)
        with self.lock:
            if ref.type == DATABASE:
                self.database = copy.deepcopy(new)
            else:
                self.table = copy.deepcopy(new)

    def write_partitions(self, database: str, table: str,
                         partitions: Sequence[Any]) -> dict[tuple[str, ...], WriteRejected]:
        assert len(partitions) <= self.batch_size
        time.sleep(self.pause)
        with self.lock:
            self.write_calls += 1
            call = self.write_calls
            rejected = {tuple(p["values"]): self.rejected[tuple(p["values"])] for p in partitions
                        if tuple(p["values"]) in self.rejected}
            for partition in partitions:
                values = tuple(partition["values"])
                if values not in rejected:
                    self.partitions[values] = copy.deepcopy(partition)
                    self.writes[values] += 1
        if call == self.failing_call:
            raise LostReply(f"write call {call}: connection reset before the answer")
        return rejected
