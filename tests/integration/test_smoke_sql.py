"""MariaDB and PostgreSQL answer through SQLAlchemy, as the `hivecat` user setup creates."""

import sqlalchemy as sa


def _round_trip(url: str) -> tuple[str, list[tuple[int, str]]]:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            version = conn.execute(sa.text("SELECT version()")).scalar_one()
            conn.execute(sa.text("CREATE TABLE smoke (id INT PRIMARY KEY, location VARCHAR(4000))"))
            conn.execute(sa.text("INSERT INTO smoke VALUES (1, 'hdfs://nn:8020/warehouse/t')"))
        with engine.connect() as conn:
            rows = [tuple(r) for r in conn.execute(sa.text("SELECT id, location FROM smoke"))]
    finally:
        engine.dispose()
    return version, rows


def test_mariadb_answers(scratch_mariadb: str) -> None:
    version, rows = _round_trip(scratch_mariadb)
    assert "MariaDB" in version or version[0].isdigit()
    assert rows == [(1, "hdfs://nn:8020/warehouse/t")]


def test_mariadb_scratch_database_is_latin1(scratch_mariadb: str) -> None:
    engine = sa.create_engine(scratch_mariadb)
    with engine.connect() as conn:
        charset = conn.execute(sa.text("SELECT @@character_set_database")).scalar_one()
    engine.dispose()
    assert charset == "latin1"


def test_postgres_answers(scratch_postgres: str) -> None:
    version, rows = _round_trip(scratch_postgres)
    assert version.startswith("PostgreSQL")
    assert rows == [(1, "hdfs://nn:8020/warehouse/t")]
