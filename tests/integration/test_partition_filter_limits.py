"""Partition filters stay cheap for the metastore's database, whatever their size, and past the size limits
they are refused before anything connects. On Glue, a filter longer than GetPartitions accepts is evaluated
client-side instead.

On a Hive 3 shape (support.hms_shapes) on MariaDB and PostgreSQL, a table `wide` (keys dt string, hr int;
DAYS x HOURS partitions) is dry-run with filters at the limits of locations/partition_filter.py: each SQL
statement reads PARTITION_KEY_VALS once per key whatever the number of values (a subquery per value once
made MariaDB use a gigabyte for 2,000 values), and the partitions selected are exactly those evaluate()
selects in Python.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa
from botocore.exceptions import ClientError

from hivecat import cli
from hivecat.catalog.glue import GlueCatalog
from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.local.net import free_port
from hivecat.locations.filter_glue import GLUE_MAX_EXPRESSION
from hivecat.locations.partition_filter import MAX_IN_VALUES, MAX_PREDICATES, MAX_VALUES, evaluate, parse_filter
from support import glue_lake
from support.hms_shapes import CatalogLayout, create_shape
from support.services import unique_name

OLD = "hdfs://nn:8020/warehouse"
NEW = "hdfs://nn2:8020/warehouse"
HIVE = CatalogLayout("hive", 1000, f"{OLD}/hive", f"{OLD}/hive")
SALES_DB_ID = HIVE.ids + 1  # catalog_rows' database `sales`
WIDE_ID = 5000              # the table's TBL_ID and SD_ID; its partitions' ids follow
KEYS = {"dt": "string", "hr": "int"}
DAYS, HOURS = 6, 24
FIRST_DAY = datetime.date(2026, 1, 1)


def wide_partitions() -> list[dict[str, str]]:
    return [{"dt": (FIRST_DAY + datetime.timedelta(days=d)).isoformat(), "hr": str(h)}
            for d in range(DAYS) for h in range(HOURS)]


def add_wide_table(url: str, metadata: sa.MetaData) -> None:
    """The table `wide` in database sales, one storage descriptor per partition, as HMS stores it."""
    t = metadata.tables
    location = f"{HIVE.root}/sales.db/wide"
    sds, serdes, partitions, key_vals = [], [], [], []

    def sd(sd_id: int, where: str) -> None:
        serdes.append({"SERDE_ID": sd_id, "NAME": None, "SLIB": "parquet-serde"})
        sds.append({"SD_ID": sd_id, "CD_ID": None, "INPUT_FORMAT": "in", "IS_COMPRESSED": False,
                    "IS_STOREDASSUBDIRECTORIES": False, "LOCATION": where, "NUM_BUCKETS": -1,
                    "OUTPUT_FORMAT": "out", "SERDE_ID": sd_id})

    sd(WIDE_ID, location)
    for n, values in enumerate(wide_partitions(), 1):
        part_id, name = WIDE_ID + n, f"dt={values['dt']}/hr={values['hr']}"
        sd(part_id, f"{location}/{name}")
        partitions.append({"PART_ID": part_id, "CREATE_TIME": 0, "LAST_ACCESS_TIME": 0, "PART_NAME": name,
                           "SD_ID": part_id, "TBL_ID": WIDE_ID})
        key_vals += [{"PART_ID": part_id, "PART_KEY_VAL": values[key], "INTEGER_IDX": i}
                     for i, key in enumerate(KEYS)]
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(t["SERDES"].insert(), serdes)
            conn.execute(t["SDS"].insert(), sds)
            conn.execute(t["TBLS"].insert(), [{"TBL_ID": WIDE_ID, "CREATE_TIME": 0, "DB_ID": SALES_DB_ID,
                                               "LAST_ACCESS_TIME": 0, "OWNER": "hive", "RETENTION": 0,
                                               "SD_ID": WIDE_ID, "TBL_NAME": "wide", "TBL_TYPE": "EXTERNAL_TABLE"}])
            conn.execute(t["PARTITION_KEYS"].insert(), [
                {"TBL_ID": WIDE_ID, "PKEY_COMMENT": None, "PKEY_NAME": key, "PKEY_TYPE": hive_type, "INTEGER_IDX": i}
                for i, (key, hive_type) in enumerate(KEYS.items())])
            conn.execute(t["PARTITIONS"].insert(), partitions)
            conn.execute(t["PARTITION_KEY_VALS"].insert(), key_vals)
    finally:
        engine.dispose()


@dataclass
class Catalog:
    sql: SqlCatalog
    statements: list[str]  # every SQL statement the catalog sent, in order


@pytest.fixture(params=["mariadb", "postgresql"])
def catalog(request: pytest.FixtureRequest) -> Iterator[Catalog]:
    url = request.getfixturevalue("scratch_mariadb" if request.param == "mariadb" else "scratch_postgres")
    add_wide_table(url, create_shape(url, 3, [HIVE]))
    sql = SqlCatalog(url, journal_schema=unique_name("hc_journal"))  # dry runs only: no journal is created
    statements: list[str] = []
    sa.event.listen(sql.engine, "before_cursor_execute",
                    lambda conn, cursor, statement, *rest: statements.append(statement))
    yield Catalog(sql, statements)
    sql.close()


def dry_run(catalog: Catalog, partition_filter: str) -> int:
    """Partitions a dry run scoped to `wide` would move."""
    report = catalog.sql.relocate(RelocationRequest(OLD, NEW, Scope("sales", "wide", partition_filter), dry_run=True))
    return report.count(ObjectKind.PARTITION).rewritten


def selected_in_python(partition_filter: str) -> int:
    expr = parse_filter(partition_filter, KEYS)
    return sum(evaluate(expr, values) for values in wide_partitions())


def in_list(key: str, values: list) -> str:
    return f"{key} IN ({', '.join(repr(v) for v in values)})"


def days(count: int, start: int = 0, step: int = 1) -> list[str]:
    return [(FIRST_DAY + datetime.timedelta(days=start + n * step)).isoformat() for n in range(count)]


# A wide two-key table built straight in SQL: no real-schema test filters partitions.
def test_each_key_is_read_once_however_many_values(catalog: Catalog) -> None:
    partition_filter = (f"{in_list('hr', list(range(0, 100, 3)))} AND NOT {in_list('dt', days(40, step=2))} "
                        f"OR hr BETWEEN 20 AND 22 AND dt >= '{days(1, 3)[0]}' OR hr = 1")
    selected = dry_run(catalog, partition_filter)
    assert selected == selected_in_python(partition_filter) > 0
    reading = [s for s in catalog.statements if "PARTITION_KEY_VALS" in s]
    assert reading, "the dry run never read the partitions' key values"
    for statement in reading:  # once for dt, once for hr: never once per value or predicate
        assert statement.count("PARTITION_KEY_VALS") <= len(KEYS), statement[:2000]


# Filters at their size limits on the wide table: no real-schema counterpart.
def test_filters_at_the_limits_select_exactly_what_evaluate_selects(catalog: Catalog) -> None:
    # MAX_VALUES values in IN lists of MAX_IN_VALUES, interleaved: together, every even hour and every
    # even day (and many values no partition holds).
    lists = MAX_VALUES // MAX_IN_VALUES
    hours = [in_list("hr", [2 * (n * lists + which) for n in range(MAX_IN_VALUES)]) for which in range(lists // 2)]
    dates = [in_list("dt", days(MAX_IN_VALUES, 2 * which, 2 * (lists - lists // 2)))
             for which in range(lists - lists // 2)]
    at_the_values_limit = f"({' OR '.join(hours)}) AND ({' OR '.join(dates)})"
    at_the_predicates_limit = " OR ".join(f"hr = {h}" for h in range(0, 2 * MAX_PREDICATES, 2))
    for partition_filter in (at_the_values_limit, at_the_predicates_limit):
        expected = selected_in_python(partition_filter)
        assert 0 < expected < DAYS * HOURS
        assert dry_run(catalog, partition_filter) == expected
        assert len(list(catalog.sql.list_partitions("sales", "wide", partition_filter))) == expected


# Filters past their limits: no real-schema counterpart.
def test_past_a_limit_the_catalog_refuses_the_filter(catalog: Catalog) -> None:
    too_long = in_list("hr", list(range(MAX_IN_VALUES + 1)))
    with pytest.raises(RelocationRefused) as refused:
        dry_run(catalog, too_long)
    [refusal] = refused.value.refusals
    assert refusal.reason == "invalid-filter" and f"limit of {MAX_IN_VALUES}" in refusal.message


@pytest.mark.parametrize("partition_filter, limit", [
    (in_list("hr", list(range(MAX_IN_VALUES + 1))), f"limit of {MAX_IN_VALUES}"),
    (" OR ".join(["hr = 1"] * (MAX_PREDICATES + 1)), f"limit of {MAX_PREDICATES}"),
    (" OR ".join([in_list("hr", list(range(MAX_IN_VALUES)))] * (MAX_VALUES // MAX_IN_VALUES) + ["hr = 1"]),
     f"limit of {MAX_VALUES}"),
], ids=["in-values", "predicates", "values"])
def test_the_cli_refuses_past_a_limit_before_connecting(partition_filter: str, limit: str, capsys) -> None:
    nothing_listens = f"mysql://nobody@127.0.0.1:{free_port()}/metastore"
    code = cli.main(["relocate", "--catalog", nothing_listens, "--from", OLD, "--to", NEW, "--database", "sales",
                     "--table", "wide", "--partition-filter", partition_filter])
    error = capsys.readouterr().err
    assert code == 2 and "--partition-filter" in error and limit in error, error


def _refuse_long_expressions(client) -> list[int]:
    """Make the client refuse a GetPartitions Expression over GLUE_MAX_EXPRESSION characters, as AWS Glue does
    (moto accepts any, and botocore checks no maximum length); the lengths it was sent, in order."""
    sent: list[int] = []

    def check(params: dict, **_) -> None:
        sent.append(len(params.get("Expression", "")))
        if sent[-1] > GLUE_MAX_EXPRESSION:
            raise ClientError({"Error": {"Code": "ValidationException",
                                         "Message": "Expression: length must be at most 2048"}}, "GetPartitions")

    client.meta.events.register("provide-client-params.glue.GetPartitions", check)
    return sent


def test_glue_evaluates_a_filter_too_long_for_getpartitions_itself(moto, tmp_path) -> None:
    glue = moto.client("glue")
    glue_lake.build_lake(glue)
    days = sorted(p["Values"][0] for p in glue_lake.pages(glue, "get_partitions", "Partitions", DatabaseName="sales",
                                                          TableName="events"))
    partition_filter = in_list("dt", days[::2] + [f"2099-01-{d:02d}" for d in range(1, 29)])  # and days no one has
    assert len(partition_filter) > GLUE_MAX_EXPRESSION
    sent = _refuse_long_expressions(glue)
    catalog = GlueCatalog(moto.region, client=glue, journal_url=f"sqlite:///{tmp_path}/j.db", functions=False)
    try:
        report = catalog.relocate(RelocationRequest(glue_lake.OLD, glue_lake.NEW,
                                                    Scope("sales", "events", partition_filter), dry_run=True))
    finally:
        catalog.close()
    assert sent and max(sent) <= GLUE_MAX_EXPRESSION
    assert report.count(ObjectKind.PARTITION).rewritten == len(days[::2]) == glue_lake.PARTITIONS // 2
