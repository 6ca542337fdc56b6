"""The HMS fixture is a real Hive Metastore: Spark writes through it, MariaDB holds the rows."""

import sqlalchemy as sa

from support.services import refresh_table


def test_spark_table_lands_in_metastore_database(spark, hive_metastore, hive_database) -> None:
    table = f"{hive_database}.sales"
    spark.sql(f"CREATE TABLE {table} (id INT, amount DOUBLE, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 1.5, '2026-11-01'), (2, 2.5, '2026-11-02'), (3, 3.5, '2026-11-02')")

    engine = sa.create_engine(hive_metastore.sql_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT t.TBL_NAME, s.LOCATION, p.PART_NAME, ps.LOCATION "
            "FROM TBLS t JOIN DBS d ON d.DB_ID = t.DB_ID JOIN SDS s ON s.SD_ID = t.SD_ID "
            "JOIN PARTITIONS p ON p.TBL_ID = t.TBL_ID JOIN SDS ps ON ps.SD_ID = p.SD_ID "
            "WHERE d.NAME = :db ORDER BY p.PART_NAME"), {"db": hive_database}).all()
    engine.dispose()
    table_location = (hive_metastore.warehouse / f"{hive_database}.db" / "sales").as_uri().replace("file:///", "file:/")
    assert [r[2] for r in rows] == ["dt=2026-11-01", "dt=2026-11-02"]
    assert {r[1] for r in rows} == {table_location}
    assert [r[3] for r in rows] == [f"{table_location}/dt=2026-11-01", f"{table_location}/dt=2026-11-02"]

    # The same facts over Thrift, and the data readable back through the catalog.
    with hive_metastore.client() as client:
        parts = client.get_partitions(hive_database, "sales", -1)
    assert sorted(p.sd.location for p in parts) == [r[3] for r in rows]
    refresh_table(spark, table)
    assert spark.sql(f"SELECT dt, count(*) FROM {table} GROUP BY dt ORDER BY dt").collect() == [
        ("2026-11-01", 1), ("2026-11-02", 2)]
