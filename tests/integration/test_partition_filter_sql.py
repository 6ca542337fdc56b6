"""The SQL translations, proven on real databases row for row against their Python definitions.

- prefix.sql_match / sql_rewrite against is_under / rebase: one UPDATE over a table of nasty locations;
- filter_sql.to_sql against evaluate: one SELECT over a key/value table shaped like PARTITION_KEY_VALS.

The columns are made hostile on purpose: MariaDB's latin1_swedish_ci ignores case and trailing spaces and
equates 'ü' with 'y'; on PostgreSQL both columns use a case-insensitive (nondeterministic) ICU collation,
which also sorts linguistically ('a' < 'B').
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivecat.locations.filter_sql import to_sql
from hivecat.locations.partition_filter import (
    And, Between, Compare, Expr, In, KeyKind, Like, Not, Or, evaluate, parse_filter,
)
from hivecat.locations.prefix import is_under, rebase, sql_match, sql_rewrite
from support.location_strategies import LocationAlphabet

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Database:
    engine: sa.Engine
    kind: str  # mariadb or postgresql


@pytest.fixture(params=["mariadb", "postgresql"])
def database(request: pytest.FixtureRequest) -> Iterator[Database]:
    url = request.getfixturevalue("scratch_mariadb" if request.param == "mariadb" else "scratch_postgres")
    engine = sa.create_engine(url)
    yield Database(engine, request.param)
    engine.dispose()


# --- locations ------------------------------------------------------------------------------------

def locations_table(db: Database, unicode: bool = False, charset: str = "utf8mb4") -> sa.Table:
    """unicode: a column holding any character (on MariaDB, in `charset`: utf16 is one whose bytes are not
    ASCII's, where sql_match compares through a conversion)."""
    metadata = sa.MetaData()
    if db.kind == "mariadb" and unicode:
        column_type, options = sa.String(4000, collation=f"{charset}_general_ci"), {"mysql_charset": charset}
    elif db.kind == "mariadb":
        column_type, options = sa.String(4000, collation="latin1_swedish_ci"), {"mysql_charset": "latin1"}
    else:
        with db.engine.begin() as conn:
            conn.execute(sa.text("CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', "
                                 "deterministic = false)"))
        column_type, options = sa.String(4000, collation="ci"), {}
    table = sa.Table("locations", metadata,
                     sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
                     sa.Column("loc", column_type), **options)
    metadata.create_all(db.engine)
    # The column really is hostile: a plain comparison ignores case (and, on MariaDB, trailing spaces).
    with db.engine.begin() as conn:
        conn.execute(table.insert(), [{"id": 1, "loc": "hdfs://NN/W"}])
        assert conn.execute(sa.select(sa.func.count()).where(table.c.loc == "hdfs://nn/w")).scalar_one() == 1
        if db.kind == "mariadb":
            assert conn.execute(sa.select(sa.func.count()).where(table.c.loc == "hdfs://NN/W ")).scalar_one() == 1
        conn.execute(table.delete())
    return table


def relocate_in_sql(db: Database, table: sa.Table, locations: list[str | None], old: str,
                    new: str) -> tuple[list[str | None], set[int]]:
    """The rewritten locations (one UPDATE) and the indexes sql_match selected; nothing is kept."""
    with db.engine.connect() as conn:
        with conn.begin() as transaction:
            conn.execute(table.insert(), [{"id": i, "loc": loc} for i, loc in enumerate(locations, 1)])
            matched = set(conn.execute(sa.select(table.c.id).where(sql_match(table.c.loc, old))).scalars())
            conn.execute(table.update().where(sql_match(table.c.loc, old))
                         .values(loc=sql_rewrite(table.c.loc, old, new)))
            after = dict(conn.execute(sa.select(table.c.id, table.c.loc)).all())
            transaction.rollback()
        with conn.begin() as transaction:  # without the WHERE, the CASE must leave every other row alone
            conn.execute(table.insert(), [{"id": i, "loc": loc} for i, loc in enumerate(locations, 1)])
            conn.execute(table.update().values(loc=sql_rewrite(table.c.loc, old, new)))
            unfiltered = dict(conn.execute(sa.select(table.c.id, table.c.loc)).all())
            transaction.rollback()
    assert unfiltered == after
    return [after[i] for i in range(1, len(locations) + 1)], {i - 1 for i in matched}


def assert_same_as_python(db: Database, table: sa.Table, locations: list[str | None], old: str, new: str) -> None:
    rewritten, matched = relocate_in_sql(db, table, locations, old, new)
    expected = [loc if (moved := rebase(loc, old, new)) is None else moved for loc in locations]
    for location, got, want in zip(locations, rewritten, expected):
        assert got == want, f"{location!r} under {old!r} -> {new!r}: SQL gave {got!r}, Python {want!r}"
    assert matched == {i for i, loc in enumerate(locations) if is_under(loc, old)}


def near_misses(prefix: str) -> list[str]:
    """The prefix, respelled and damaged in every way that must (or must not) still match."""
    base = prefix.rstrip("/")
    variants = [base, base + "/", base + "/t", base + "/t/", base + "//t", base + "/a b/%2F/ü/'/x?y#z",
                base.upper(), base.swapcase() + "/t", base + "2", base + "2/t", base + " ", base + " /t",
                base + "%", base + "_/t", base + "\t/t", base + "\n", base + "/t\n", " " + base,
                base[:-1] if len(base) > 8 else base + "x", base + "ÿ", "x" + base,
                "s3a://other/" + base + "/t", base.replace("y", "ü"), base.replace("ü", "y"),
                base.replace("a", "A"), base.replace("/", "//", 3), base.replace("8020", "08020")]
    if base.lower().startswith("file:/") and not base.lower().startswith("file://"):
        rest = base[5:]
        variants += ["file://" + rest + "/t", "FILE://" + rest, "file://localhost" + rest + "/t",
                     "file:////" + rest.lstrip("/"), "file:" + rest.lstrip("/")]
    return variants


PAIRS = [
    ("hdfs://nn:8020/warehouse", "s3a://bucket/w"),
    ("hdfs://nn:8020/warehouse/", "s3a://bucket/w/"),
    ("HDFS://NN:8020/warehouse", "hdfs://nn2:8020/wh"),
    ("hdfs://nn:8020", "hdfs://nn2:8020"),
    ("hdfs://nn:8020/", "viewfs://cluster/"),
    ("hdfs://ns1/warehouse", "hdfs://ns2/warehouse"),
    ("hdfs://nn:8020/y", "hdfs://nn:8020/moved"),
    ("hdfs://nn:8020/ü", "hdfs://nn:8020/moved ü"),
    ("s3a://Key@bucket/a%_b", "gs://g/x"),
    ("s3a://bucket/A b/c", "s3a://bucket/Ab"),
    ("file:/data", "file:///new data/ü"),
    ("file:///data/", "hdfs://nn/data"),
]

JUNK: list[str | None] = [None, "", " ", "hdfs:", "hdfs://", "warehouse", "/warehouse/t", "::::", "file:",
                          "hdfs://nn:8020\t/warehouse"]


@pytest.mark.parametrize("old, new", PAIRS)
def test_sql_rewrite_matches_rebase_on_nasty_locations(database: Database, old: str, new: str) -> None:
    table = locations_table(database)
    locations = list(dict.fromkeys(JUNK + [v for prefix, _ in PAIRS for v in near_misses(prefix)]))
    assert_same_as_python(database, table, locations, old, new)


def unicode_table(db: Database, charset: str) -> sa.Table:
    if db.kind != "mariadb" and charset != "utf8mb4":
        pytest.skip("PostgreSQL has one encoding per database; utf16 is a MariaDB column character set")
    return locations_table(db, unicode=True, charset=charset)


@pytest.mark.parametrize("charset", ["utf8mb4", "utf16"])
def test_sql_rewrite_matches_rebase_in_unicode_columns(database: Database, charset: str) -> None:
    table = unicode_table(database, charset)
    locations = list(dict.fromkeys(JUNK + [v for prefix, _ in PAIRS for v in near_misses(prefix)]))
    for old, new in PAIRS:
        assert_same_as_python(database, table, locations, old, new)


@pytest.mark.parametrize("charset", ["utf8mb4", "utf16"])
def test_sql_folds_ascii_case_only(database: Database, charset: str) -> None:
    # Letters that lower or upper to ASCII (the Kelvin sign, dotless i, long s) must not pass for it: MariaDB's
    # LOWER() turns the Kelvin sign into 'k' in a utf8mb4 column.
    table = unicode_table(database, charset)
    locations = ["hdfs://k/w/t", "hdfs://K/w/t", "hdfs://\u212a/w/t", "hdfs://\u0131/w", "hdfs://I/w",
                 "hdfs://\u0130/w", "hdfs://\u017f/w", "hdfs://S/w", "hdfs://\u0391/w", "hdfs://\uff4b/w/t"]
    for old in ("hdfs://k/w", "hdfs://i/w", "hdfs://s/w"):
        assert_same_as_python(database, table, locations, old, "gs://g/w")
    assert rebase("hdfs://\u212a/w/t", "hdfs://k/w", "gs://g/w") is None


# Characters that could fool a collation or a pattern: case, trailing space, ü = y (swedish_ci), %, _,
# the escape characters of LIKE and of SQL strings. All of them fit latin1.
SEGMENT_CHARS = "abyAY0 -_.%~@:?#'\\\"üÜÿé!"
SCHEMES = ["hdfs", "viewfs", "s3a", "gs", "file"]
HOSTS = ["nn", "nn2", "bucket-1", "y"]

ALPHABET = LocationAlphabet(SEGMENT_CHARS, tuple(SCHEMES), tuple(HOSTS), users=("", "", "U:p@"),
                            ports=("", ":8020"), segment_max=4)
paths = ALPHABET.paths()
prefixes = ALPHABET.prefixes


@st.composite
def locations_near(draw, prefix: str) -> str:
    base = prefix[:-1] if prefix.endswith("/") else prefix
    choice = draw(st.integers(0, 4))
    base = ALPHABET.mutate(draw, base, choice)
    if choice == 4:
        base = base.translate(str.maketrans("yüaA", "üyAa"))
    return base + draw(st.one_of(st.just(""), st.just("/"), paths, st.text(SEGMENT_CHARS + "/\t", max_size=6)))


@st.composite
def relocations(draw) -> tuple[str, str, list[str]]:
    old, new = draw(prefixes()), draw(prefixes())
    return old, new, draw(st.lists(locations_near(old), min_size=1, max_size=10))


def test_property_sql_rewrite_matches_rebase(database: Database) -> None:
    table = locations_table(database)

    @SETTINGS
    @given(relocations())
    def check(case: tuple[str, str, list[str]]) -> None:
        old, new, locations = case
        assert_same_as_python(database, table, locations, old, new)

    check()


# --- partition filters ----------------------------------------------------------------------------

KEYS = {"ds": "string", "hr": "int", "dt": "date", "price": "decimal(10,2)"}
S, I, D, O = KeyKind.STRING, KeyKind.INTEGRAL, KeyKind.DATE, KeyKind.OTHER
DS_VALUES = ["a", "A", "a ", " a", "b", "B", "", "y", "ü", "Ü", "ab", "aB", "a%b", "a_b", "axb", "a!b",
             "a\\b", "it's", "__HIVE_DEFAULT_PARTITION__", "a\nb", "10", "9"]
HR_VALUES = ["0", "1", "01", "-1", "-0", "9", "10", "99999999999999999999", "-99999999999999999999",
             "123456789012345678901", "__HIVE_DEFAULT_PARTITION__", "", " 5", "5 ", "5\n", "+5", "1.5", "1e3",
             "x", "-"]
DT_VALUES = ["2024-01-01", "2024-01-31", "2024-02-01", "2023-12-31", "__HIVE_DEFAULT_PARTITION__"]
PRICE_VALUES = ["1.5", "1.50", "2"]


def partition_rows() -> dict[int, dict[str, str]]:
    rows = {}
    for n, (ds, hr) in enumerate(itertools.product(DS_VALUES, HR_VALUES), 1):
        rows[n] = {"ds": ds, "hr": hr, "dt": DT_VALUES[n % len(DT_VALUES)],
                   "price": PRICE_VALUES[n % len(PRICE_VALUES)]}
    return rows


@dataclass(frozen=True)
class Partitions:
    db: Database
    parts: sa.Table
    values: sa.Table
    rows: dict[int, dict[str, str]]

    def value_of(self, key: str) -> sa.ColumnElement[str]:
        # As a catalog does it over PARTITION_KEY_VALS: the key's value for the current partition.
        return (sa.select(self.values.c.value)
                .where(self.values.c.part_id == self.parts.c.id, self.values.c.key_name == key)
                .scalar_subquery())

    def selected_by_sql(self, expr: Expr) -> set[int]:
        with self.db.engine.connect() as conn:
            return set(conn.execute(sa.select(self.parts.c.id).where(to_sql(expr, self.value_of))).scalars())

    def selected_by_python(self, expr: Expr) -> set[int]:
        return {n for n, values in self.rows.items() if evaluate(expr, values)}


def partitions(db: Database) -> Partitions:
    metadata = sa.MetaData()
    if db.kind == "mariadb":
        value_type, options = sa.String(256, collation="latin1_swedish_ci"), {"mysql_charset": "latin1"}
    else:
        with db.engine.begin() as conn:
            conn.execute(sa.text("CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', "
                                 "deterministic = false)"))
        value_type, options = sa.String(256, collation="ci"), {}
    parts = sa.Table("parts", metadata, sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
                     **options)
    values = sa.Table("part_key_vals", metadata,
                      sa.Column("part_id", sa.Integer, sa.ForeignKey("parts.id"), primary_key=True),
                      sa.Column("key_name", sa.String(128), primary_key=True),
                      sa.Column("value", value_type), **options)
    metadata.create_all(db.engine)
    with db.engine.begin() as conn:  # the column really is hostile
        conn.execute(parts.insert(), [{"id": 0}])
        conn.execute(values.insert(), [{"part_id": 0, "key_name": "ds", "value": "A"}])
        assert conn.execute(sa.select(sa.func.count()).where(values.c.value == "a")).scalar_one() == 1
        assert conn.execute(sa.select(sa.func.count()).where(values.c.value < "B")).scalar_one() == 1
        conn.execute(values.delete())
        conn.execute(parts.delete())
    rows = partition_rows()
    with db.engine.begin() as conn:
        conn.execute(parts.insert(), [{"id": n} for n in rows])
        conn.execute(values.insert(), [{"part_id": n, "key_name": k, "value": v}
                                       for n, vals in rows.items() for k, v in vals.items()])
        stored = {(r.part_id, r.key_name): r.value for r in conn.execute(sa.select(values))}
    assert stored == {(n, k): v for n, vals in rows.items() for k, v in vals.items()}  # nothing was trimmed
    return Partitions(db, parts, values, rows)


FILTERS = [
    "ds = 'a'", "ds = 'A'", "ds != 'a'", "ds = 'a '", "ds = 'y'", "ds = 'ü'", "ds < 'b'", "ds >= 'B'",
    "ds > 'a'", "ds <= ''", "ds between 'a' and 'b'", "ds in ('a', 'y', '')", "ds not in ('a')",
    "ds like 'a%'", "ds like 'A%'", "ds like '%b'", "ds like 'a_b'", "ds like 'a\\\\%b'", "ds like 'a\\\\_b'",
    "ds like 'a!b'", "ds like 'a\\\\\\\\b'", "ds like '_'", "ds like ''", "ds like '%'", "ds like 'a'",
    "ds like 'a%' and not ds like '%b'", "ds like 'a\\\\%'",
    "hr = 1", "hr = 0", "hr != 0", "hr < 5", "hr >= 10", "hr > -1", "hr = 99999999999999999999",
    "hr < -99999999999999999998", "hr between 1 and 9", "hr not between 1 and 9", "hr in (0, 1, 10)",
    "not hr in (0, 1, 10)", "not hr = 1", "hr = 1 or ds = 'a'", "not (hr = 1 and ds = 'a')",
    "not (hr = 1 or ds = 'a')", "hr = '9'", "5 > hr", "'b' <= ds",
    "dt = '2024-01-01'", "dt < '2024-02-01'", "dt between '2024-01-01' and '2024-01-31'", "dt != '2024-01-01'",
    "price = '1.5'", "price != '1.50'", "price in ('2', '1.50')",
    "ds = 'a' or ds = 'b' and hr = 1", "(ds = 'a' or ds = 'b') and hr = 1", "not ds = 'a' and hr > 0",
]


@pytest.mark.parametrize("text", FILTERS)
def test_to_sql_matches_evaluate_on_hand_picked_filters(database: Database, text: str) -> None:
    data = partitions(database)
    expr = parse_filter(text, KEYS)
    assert data.selected_by_sql(expr) == data.selected_by_python(expr), text


DANGLING_BACKSLASH = re.compile(r"(^|[^\\])(\\\\)*\\\Z")
OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
ds_literals = st.one_of(st.sampled_from(DS_VALUES), st.text("abyABüÜ %_!\\'", max_size=3))
hr_literals = st.one_of(st.integers(-12, 12), st.sampled_from([10**20 - 1, -(10**20 - 1), 10**20 - 2, 123]))
dt_literals = st.sampled_from(["2023-12-31", "2024-01-01", "2024-01-15", "2024-01-31", "2024-02-01"])
price_literals = st.sampled_from(PRICE_VALUES + ["1"])
patterns = st.one_of(
    st.sampled_from(["a%", "%b", "a_b", "a\\%b", "a\\_b", "a!b", "a\\\\b", "%", "_", "", "__HIVE%", "%\n%"]),
    st.text("abyAü%_!\\ \n", max_size=4).filter(lambda p: not DANGLING_BACKSLASH.search(p)),
)
leaves = st.one_of(
    st.builds(Compare, st.just("ds"), st.just(S), OPS, ds_literals),
    st.builds(Compare, st.just("hr"), st.just(I), OPS, hr_literals),
    st.builds(Compare, st.just("dt"), st.just(D), OPS, dt_literals),
    st.builds(Compare, st.just("price"), st.just(O), st.sampled_from(["=", "!="]), price_literals),
    st.builds(Like, st.just("ds"), patterns),
    st.builds(Between, st.just("ds"), st.just(S), ds_literals, ds_literals),
    st.builds(Between, st.just("hr"), st.just(I), hr_literals, hr_literals),
    st.builds(Between, st.just("dt"), st.just(D), dt_literals, dt_literals),
    st.builds(In, st.just("ds"), st.just(S), st.lists(ds_literals, min_size=1, max_size=3).map(tuple)),
    st.builds(In, st.just("hr"), st.just(I), st.lists(hr_literals, min_size=1, max_size=3).map(tuple)),
    st.builds(In, st.just("price"), st.just(O), st.lists(price_literals, min_size=1, max_size=2).map(tuple)),
)
trees = st.recursive(leaves, lambda inner: st.one_of(
    st.builds(Not, inner),
    st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
), max_leaves=6)


def test_property_to_sql_matches_evaluate(database: Database) -> None:
    data = partitions(database)

    @SETTINGS
    @given(trees)
    def check(expr: Expr) -> None:
        assert data.selected_by_sql(expr) == data.selected_by_python(expr)

    check()
