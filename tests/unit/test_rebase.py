"""Location prefixes: parsing, the anchored rebase rules, relocation checks, and the SQL rendering."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from sqlalchemy.dialects import mysql, postgresql

from hivecat.locations.prefix import (
    InvalidLocation, LocationPrefix, Piece, check_relocation, is_under, parse_prefix, rebase, same_family,
    scheme_family, sql_match, sql_rewrite,
)
from support.location_strategies import LocationAlphabet

NN = "hdfs://nn:8020/warehouse"


# --- parsing ------------------------------------------------------------------------------------

@pytest.mark.parametrize("uri, scheme, authority, path, canonical", [
    ("hdfs://nn:8020/warehouse", "hdfs", "nn:8020", "/warehouse", "hdfs://nn:8020/warehouse"),
    ("HDFS://NN.Example.COM:8020/Warehouse/", "hdfs", "nn.example.com:8020", "/Warehouse",
     "hdfs://nn.example.com:8020/Warehouse"),
    ("hdfs://nameservice1", "hdfs", "nameservice1", "", "hdfs://nameservice1"),
    ("hdfs://nameservice1/", "hdfs", "nameservice1", "", "hdfs://nameservice1"),
    ("s3a://User:Secret@Bucket/x", "s3a", "User:Secret@bucket", "/x", "s3a://User:Secret@bucket/x"),
    ("hdfs://[FE80::1]:8020/w", "hdfs", "[fe80::1]:8020", "/w", "hdfs://[fe80::1]:8020/w"),
    ("hdfs://nn:08020/w", "hdfs", "nn:08020", "/w", "hdfs://nn:08020/w"),
    ("file:/data/x", "file", "", "/data/x", "file:/data/x"),
    ("file:///data/x/", "file", "", "/data/x", "file:/data/x"),
    ("FILE:/Data", "file", "", "/Data", "file:/Data"),
    ("gs://bucket/a b/%20c", "gs", "bucket", "/a b/%20c", "gs://bucket/a b/%20c"),
    ("jfs://vol/x", "jfs", "vol", "/x", "jfs://vol/x"),
])
def test_parse_prefix_canonical_form(uri: str, scheme: str, authority: str, path: str, canonical: str) -> None:
    prefix = parse_prefix(uri)
    assert (prefix.scheme, prefix.authority, prefix.path) == (scheme, authority, path)
    assert str(prefix) == canonical
    assert parse_prefix(canonical) == prefix


@pytest.mark.parametrize("uri, message", [
    ("", "empty"),
    ("   ", "empty"),
    ("\t", "empty"),
    ("/warehouse", "no URI scheme"),
    ("warehouse/x", "no URI scheme"),
    ("nn:8020/warehouse", "needs an authority"),
    ("hdfs:/warehouse", "needs an authority"),
    ("hdfs:///warehouse", "needs an authority"),
    ("viewfs:///x", "needs an authority"),
    ("s3a:bucket/x", "needs an authority"),
    ("abfss:/x", "needs an authority"),
    ("gs:///x", "needs an authority"),
    ("jfs:/x", "needs an authority"),
    ("file:data", "relative"),
    ("file:", "relative"),
    ("file://localhost/data", "authority"),
    ("file://host/data", "authority"),
    ("file:/", "root"),
    ("file:///", "root"),
    ("hdfs://nn/a\x00b", "control"),
    ("hdfs://nn/a\nb", "control"),
    ("hdfs://nn/a\u200bb", "control"),
    ("hdfs://nn/a\x85b", "control"),
    (" hdfs://nn/a", "whitespace"),
    ("hdfs://nn/a ", "whitespace"),
    ("hdfs://nn/a \t/b", "control"),
    ("hdfs://nn/a /b", None),  # fine: a space inside a path is legal
    ("hdfs://nn/a//b", "empty"),
    ("hdfs://nn/a//", "empty"),
    ("hdfs://nn//", "empty"),
    ("hdfs://nn/./a", "'.'"),
    ("hdfs://nn/a/..", "'..'"),
    ("hdfs://nn:/a", "port"),
    ("hdfs://nn:80a/a", "port"),
    ("hdfs://:8020/a", "host"),
    ("hdfs://@nn/a", "userinfo"),
    ("hdfs://n n/a", "host"),
    ("hdfs://nü/a", "host"),
    ("hdfs://[::1/a", "IPv6"),
    ("1hdfs://nn/a", "no URI scheme"),
])
def test_parse_prefix_refuses(uri: str, message: str | None) -> None:
    if message is None:
        parse_prefix(uri)
        return
    with pytest.raises(InvalidLocation, match=re.escape(message)) as raised:
        parse_prefix(uri)
    assert raised.value.reason == "invalid-uri"


def test_parse_prefix_refuses_non_strings() -> None:
    with pytest.raises(InvalidLocation):
        parse_prefix(None)  # type: ignore[arg-type]


def test_location_prefix_checks_its_invariants_when_built_directly() -> None:
    assert LocationPrefix("hdfs", "nn:8020", "/w") == parse_prefix("hdfs://nn:8020/w")
    for fields in [("HDFS", "nn", "/w"), ("hdfs", "NN", "/w"), ("hdfs", "nn", "/w/"), ("hdfs", "nn", "w"),
                   ("hdfs", "", "/w"), ("file", "localhost", "/w"), ("file", "", ""), ("hdfs", "nn", "/a\x00b"),
                   ("file", "", "/a\u200b")]:
        with pytest.raises(InvalidLocation):
            LocationPrefix(*fields)


def test_spellings_and_head_length() -> None:
    file_prefix = parse_prefix("file:/data")
    assert file_prefix.spellings() == ("file:/data", "file:///data")
    assert [file_prefix.head_length(s) for s in file_prefix.spellings()] == [5, 7]
    hdfs = parse_prefix("HDFS://NN:8020/Warehouse")
    assert hdfs.spellings() == ("hdfs://nn:8020/Warehouse",)
    assert hdfs.head_length("hdfs://nn:8020/Warehouse") == len("hdfs://nn:8020")
    assert parse_prefix("hdfs://nn:8020").head_length("hdfs://nn:8020") == len("hdfs://nn:8020")
    with pytest.raises(ValueError):
        hdfs.head_length("hdfs://other/Warehouse")


def test_patterns_fold_case_only_in_scheme_and_host() -> None:
    assert parse_prefix("S3A://Key@Bucket:99/P").patterns() == ((
        Piece("s3a://", True), Piece("Key@", False), Piece("bucket", True), Piece(":99/P", False)),)
    assert parse_prefix("hdfs://nn/p").patterns() == ((Piece("hdfs://nn", True), Piece("/p", False)),)


# --- rebase: examples, one per rule ---------------------------------------------------------------

@pytest.mark.parametrize("location, expected", [
    (NN, "s3a://b/w"),                                           # the prefix itself
    (NN + "/", "s3a://b/w/"),                                    # ... with its trailing slash kept
    (NN + "/db.db/t", "s3a://b/w/db.db/t"),
    (NN + "//x", "s3a://b/w//x"),                                # odd remainder kept byte for byte
    (NN + "/a b/%2F/ü/\\/'\"/x?y#z", "s3a://b/w/a b/%2F/ü/\\/'\"/x?y#z"),
    (NN + "/t\n", "s3a://b/w/t\n"),
    (NN + "/t ", "s3a://b/w/t "),
    ("HDFS://NN:8020/warehouse/t", "s3a://b/w/t"),             # scheme and host ignore case
    ("hDfS://nN:8020/warehouse", "s3a://b/w"),
    (NN + "2/x", None),                                          # never a longer segment
    (NN + ".bak/x", None),
    (NN + " /x", None),
    (NN + "%2Fx", None),
    (NN + "?x", None),
    ("hdfs://nn:8020/Warehouse/t", None),                        # the path is case-sensitive
    ("hdfs://nn:8020/wareHouse", None),
    ("hdfs://nn/warehouse/t", None),                             # the authority must match exactly
    ("hdfs://nn:80200/warehouse/t", None),
    ("hdfs://nn:08020/warehouse/t", None),
    ("hdfs://nn.example.com:8020/warehouse/t", None),
    ("hdfs://user@nn:8020/warehouse/t", None),
    ("viewfs://nn:8020/warehouse/t", None),                      # another scheme is another place
    ("s3a://b/x/" + NN + "/t", None),                           # never a match further in
    ("hdfs://nn:8020/data" + "/warehouse/t", None),
    (" " + NN, None),
])
def test_rebase_examples(location: str, expected: str | None) -> None:
    assert rebase(location, NN, "s3a://b/w") == expected
    assert is_under(location, NN) == (expected is not None)


def test_rebase_replaces_only_the_anchored_prefix_unlike_the_metatool() -> None:
    # Hive's metatool would also rewrite the second occurrence (an unanchored regex replace).
    location = NN + "/t/copy_of/" + NN + "/t"
    assert rebase(location, NN, "s3a://b/w") == "s3a://b/w/t/copy_of/" + NN + "/t"


def test_rebase_folds_ascii_case_only() -> None:
    # The Kelvin sign lowers to ASCII 'k' in Python and in some databases: it must not pass for a 'k'.
    assert rebase("hdfs://K:8020/w/t", "hdfs://k:8020/w", "gs://g") == "gs://g/t"
    assert rebase("hdfs://\u212a:8020/w/t", "hdfs://k:8020/w", "gs://g") is None
    assert rebase("hdfs://k:8020/w/t", "hdfs://k:8020/w", "gs://g") == "gs://g/t"


def test_rebase_host_case_but_not_userinfo_case() -> None:
    assert rebase("s3a://key@BUCKET/x/y", "s3a://key@bucket/x", "gs://g") == "gs://g/y"
    assert rebase("s3a://KEY@bucket/x/y", "s3a://key@bucket/x", "gs://g") is None


def test_rebase_authority_with_and_without_port_are_different() -> None:
    assert rebase("hdfs://ns1/w/t", "hdfs://ns1/w", "hdfs://ns2/w") == "hdfs://ns2/w/t"
    assert rebase("hdfs://ns1:8020/w/t", "hdfs://ns1/w", "hdfs://ns2/w") is None
    assert rebase("hdfs://ns1/w/t", "hdfs://ns1:8020/w", "hdfs://ns2/w") is None


@pytest.mark.parametrize("old", ["hdfs://nn:8020/w", "hdfs://nn:8020/w/", "HDFS://NN:8020/w/"])
@pytest.mark.parametrize("new, expected", [
    ("s3a://b/x", "s3a://b/x/t"), ("s3a://b/x/", "s3a://b/x/t"), ("S3A://B/X/", "S3A://B/X/t"),
])
def test_rebase_ignores_trailing_slashes_and_keeps_the_callers_new_spelling(old: str, new: str,
                                                                            expected: str) -> None:
    assert rebase("hdfs://nn:8020/w/t", old, new) == expected


def test_rebase_root_prefix() -> None:
    for location, expected in [("hdfs://nn:8020", "hdfs://nn2:8020"), ("hdfs://nn:8020/", "hdfs://nn2:8020/"),
                               ("hdfs://nn:8020/a/b", "hdfs://nn2:8020/a/b"), ("hdfs://nn:8020a", None),
                               ("hdfs://nn:80201/a", None), ("hdfs://nn:8020?a", None)]:
        assert rebase(location, "hdfs://nn:8020/", "hdfs://nn2:8020/") == expected
        assert rebase(location, "hdfs://nn:8020", "hdfs://nn2:8020") == expected
    assert rebase("hdfs://nn:8020/w/t", "hdfs://nn:8020/w", "hdfs://nn2:8020/") == "hdfs://nn2:8020/t"


@pytest.mark.parametrize("location, expected", [
    ("file:/data", "file:/new"),
    ("file:/data/t", "file:/new/t"),
    ("file:///data/t", "file:/new/t"),
    ("FILE:///data/t", "file:/new/t"),
    ("File:/data/", "file:/new/"),
    ("file://localhost/data/t", None),   # decided: not the same place (Hadoop: Wrong FS)
    ("file://host/data/t", None),
    ("file:////data/t", None),
    ("file:data/t", None),
    ("file:/data2/t", None),
    ("file:/Data/t", None),
])
@pytest.mark.parametrize("old", ["file:/data", "file:///data", "file:/data/", "FILE:///data/"])
def test_rebase_file_spellings(old: str, location: str, expected: str | None) -> None:
    assert rebase(location, old, "file:/new") == expected


@pytest.mark.parametrize("junk", [None, 42, b"hdfs://nn:8020/warehouse", "", " ", "hdfs:", "hdfs://",
                                  "warehouse", "/warehouse/t", "::::", "\x00", "hdfs://nn:8020\x00/warehouse"])
def test_rebase_junk_locations_never_raise(junk: object) -> None:
    assert rebase(junk, NN, "s3a://b/w") is None  # type: ignore[arg-type]
    assert is_under(junk, NN) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("old, new", [("", "s3a://b/w"), (NN, ""), ("/warehouse", "s3a://b/w"),
                                      (NN, "hdfs:///x"), (NN, "file:/"), ("file://localhost/x", NN)])
def test_rebase_refuses_invalid_prefixes(old: str, new: str) -> None:
    with pytest.raises(InvalidLocation):
        rebase(NN + "/t", old, new)


def test_rebase_accepts_parsed_prefixes() -> None:
    old, new = parse_prefix("file:///data"), parse_prefix("hdfs://nn/x/")
    assert rebase("file:///data/t", old, new) == "hdfs://nn/x/t"


# --- families and relocation checks ---------------------------------------------------------------

@pytest.mark.parametrize("a, b", [("hdfs", "viewfs"), ("s3", "s3a"), ("s3n", "S3A"), ("abfs", "wasbs"),
                                  ("abfss", "wasb"), ("gs", "GS"), ("file", "FILE")])
def test_scheme_families_same(a: str, b: str) -> None:
    assert scheme_family(a) == scheme_family(b)


@pytest.mark.parametrize("a, b", [("hdfs", "s3a"), ("s3a", "gs"), ("abfs", "s3"), ("file", "hdfs"),
                                  ("jfs", "hdfs"), ("jfs", "oss"), ("abfs", "azure")])
def test_scheme_families_different(a: str, b: str) -> None:
    assert scheme_family(a) != scheme_family(b)


def test_same_family() -> None:
    assert same_family(parse_prefix("hdfs://a/x"), parse_prefix("viewfs://b/y"))
    assert not same_family(parse_prefix("hdfs://a/x"), parse_prefix("s3a://b/y"))


@pytest.mark.parametrize("old, new", [
    (NN, NN), (NN, NN + "/"), (NN, "HDFS://NN:8020/warehouse"), (NN, NN + "/archive"), (NN + "/db", NN),
    ("hdfs://nn:8020", NN), ("file:/data", "file:///data/x"), ("file:///data/x", "file:/data"),
])
def test_check_relocation_refuses_overlap(old: str, new: str) -> None:
    with pytest.raises(InvalidLocation, match="overlap|same location") as raised:
        check_relocation(old, new, allow_scheme_change=True)
    assert raised.value.reason == "overlap"


def test_check_relocation_allows_siblings_and_near_names() -> None:
    assert check_relocation(NN, NN + "2", allow_scheme_change=False) == (parse_prefix(NN), parse_prefix(NN + "2"))
    check_relocation("hdfs://nn/w", "hdfs://nn:8020/w", allow_scheme_change=False)
    check_relocation("hdfs://nn/w", "viewfs://nn/w", allow_scheme_change=False)
    check_relocation("s3://b/w", "s3a://b/w", allow_scheme_change=False)


def test_check_relocation_cross_family_needs_permission() -> None:
    with pytest.raises(InvalidLocation, match="hdfs: to s3a:") as raised:
        check_relocation(NN, "s3a://b/w", allow_scheme_change=False)
    assert raised.value.reason == "scheme-change"
    assert check_relocation(NN, "s3a://b/w", allow_scheme_change=True)[1] == parse_prefix("s3a://b/w")


@pytest.mark.parametrize("old, new, role", [("/w", "s3a://b/w", "old"), (NN, "hdfs:///w", "new")])
def test_check_relocation_names_the_invalid_prefix(old: str, new: str, role: str) -> None:
    with pytest.raises(InvalidLocation, match=f"invalid {role} prefix") as raised:
        check_relocation(old, new, allow_scheme_change=True)
    assert raised.value.reason == "invalid-uri"


# --- properties -----------------------------------------------------------------------------------

# Characters that matter to a prefix match: separators, case, wildcards in other languages, the Kelvin
# sign (lowers to ASCII 'k'), latin1 letters that case-insensitive collations equate (ü, y).
SEGMENT_CHARS = "abkyAKY09 -_.%~@:?#'\\\"üÿK\u212a"
SCHEMES = ["hdfs", "viewfs", "s3a", "s3", "abfss", "gs", "jfs", "file"]
HOSTS = ["nn", "nn2", "nn.example.com", "bucket-1", "k"]


def ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def reference_canonical(text: str) -> str:
    """An independent, deliberately plain normalization: lower-case scheme and host, one file: spelling."""
    if ascii_lower(text[:5]) == "file:":
        rest = text[5:]
        return "file:" + (rest[2:] if rest.startswith("///") else rest)
    m = re.fullmatch(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/@]*@)?([^/:]*)(.*)", text, re.DOTALL)
    if not m:
        return text
    return ascii_lower(m[1]) + "://" + (m[2] or "") + ascii_lower(m[3]) + m[4]


def reference_under(location: str, prefix: str) -> bool:
    base = reference_canonical(prefix[:-1] if prefix.endswith("/") else prefix)
    canonical = reference_canonical(location)
    return canonical == base or canonical.startswith(base + "/")


def strip_slash(prefix: str) -> str:
    return prefix[:-1] if prefix.endswith("/") else prefix


ALPHABET = LocationAlphabet(SEGMENT_CHARS, tuple(SCHEMES), tuple(HOSTS), users=("", "", "", "u@", "U:p@"),
                            ports=("", ":8020", ":9000"), segment_max=5)
paths = ALPHABET.paths()
prefixes = ALPHABET.prefixes


tails = st.one_of(
    st.just(""), st.just("/"),
    paths.map(lambda p: p + "/"), paths,
    st.text(SEGMENT_CHARS + "/", max_size=8),
)


@st.composite
def locations_near(draw, prefix: str) -> str:
    """A location that is, or nearly is, under `prefix`: respelled, mutated, then given a tail."""
    base = strip_slash(prefix)
    choice = draw(st.integers(0, 4))
    base = ALPHABET.mutate(draw, base, choice)
    if choice == 4 and ascii_lower(base).startswith("file:"):
        rest = base[5:]
        base = base[:5] + (rest[2:] if rest.startswith("///") else "//" + rest)
    return base + draw(tails)


@st.composite
def prefix_and_location(draw) -> tuple[str, str]:
    prefix = draw(prefixes())
    return prefix, draw(locations_near(prefix))


# deadline=None here and below: hypothesis' per-example time limit fails on a busy machine
@settings(max_examples=1500, deadline=None)
@given(prefix_and_location())
@example(("hdfs://nn:8020/w", "hdfs://nn:8020/w2"))
@example(("hdfs://nn:8020/", "hdfs://nn:8020"))
@example(("file:/d", "file:///d/x"))
@example(("file:/d", "file://localhost/d/x"))
@example(("hdfs://k/d", "hdfs://\u212a/d"))
def test_property_matches_iff_equal_or_followed_by_slash(case: tuple[str, str]) -> None:
    prefix, location = case
    assert (rebase(location, prefix, "gs://g/n") is not None) == reference_under(location, prefix)
    assert is_under(location, prefix) == reference_under(location, prefix)


@settings(max_examples=300, deadline=None)
@given(prefixes(), prefixes(), tails.filter(lambda t: t == "" or t.startswith("/")))
def test_property_round_trip(a: str, b: str, tail: str) -> None:
    try:
        check_relocation(a, b, allow_scheme_change=True)
    except InvalidLocation:
        assume(False)
    location = strip_slash(a) + tail
    moved = rebase(location, a, b)
    assert moved is not None
    assert rebase(moved, b, a) == location


@settings(max_examples=300, deadline=None)
@given(prefixes(), prefixes(), st.data())
def test_property_round_trip_from_another_spelling(a: str, b: str, data: st.DataObject) -> None:
    try:
        check_relocation(a, b, allow_scheme_change=True)
    except InvalidLocation:
        assume(False)
    location = data.draw(locations_near(a))
    assume(is_under(location, a))
    back = rebase(rebase(location, a, b), b, a)
    assert back is not None and reference_canonical(back) == reference_canonical(location)


@settings(max_examples=300, deadline=None)
@given(prefixes(), st.text(SEGMENT_CHARS + "/", min_size=1, max_size=8).filter(lambda s: not s.startswith("/")))
def test_property_never_matches_a_longer_segment(prefix: str, suffix: str) -> None:
    assert rebase(strip_slash(prefix) + suffix, prefix, "gs://g/n") is None


@settings(max_examples=300, deadline=None)
@given(prefix_and_location(), prefixes())
def test_property_result_starts_with_new_prefix(case: tuple[str, str], new: str) -> None:
    prefix, location = case
    moved = rebase(location, prefix, new)
    assume(moved is not None)
    assert moved.startswith(strip_slash(new))
    assert moved[len(strip_slash(new)):] in ("",) or moved[len(strip_slash(new))] == "/"


@settings(max_examples=300, deadline=None)
@given(prefix_and_location(), prefixes())
def test_property_trailing_slash_invariance(case: tuple[str, str], new: str) -> None:
    prefix, location = case
    old_bare, new_bare = strip_slash(prefix), strip_slash(new)
    results = {rebase(location, old, new_) for old in (old_bare, old_bare + "/")
               for new_ in (new_bare, new_bare + "/")}
    assert len(results) == 1


@settings(max_examples=300, deadline=None)
@given(prefixes())
def test_property_canonical_form_is_stable(prefix: str) -> None:
    parsed = parse_prefix(prefix)
    assert parse_prefix(str(parsed)) == parsed
    assert all(parse_prefix(spelling) == parsed for spelling in parsed.spellings())
    assert is_under(prefix, parsed) and is_under(str(parsed), prefix)


# --- SQL rendering (real databases: tests/integration/test_partition_filter_sql.py) ---------------

def _sql(expression, dialect) -> str:
    return str(expression.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def test_sql_match_compares_exactly_on_mysql() -> None:
    text = _sql(sql_match(sa.column("loc", sa.String), "hdfs://nn:8020/w%_"), mysql.dialect())
    # The one LIKE: bytes against the spelling, its wildcards escaped (no collation folds case or pads).
    assert text.count("LIKE") == 1
    assert "CAST(loc AS BINARY) LIKE CAST('hdfs://nn:8020/w!%%!_/%%' AS BINARY) ESCAPE '!'" in text
    assert "CAST(CONVERT(substring(loc, 10, 9) USING utf8mb4) AS BINARY) = " \
           "CAST(CONVERT(':8020/w%%_' USING utf8mb4) AS BINARY)" in text
    assert "CAST(CONVERT(lower(substring(loc, 1, 9)) USING utf8mb4) AS BINARY) = " \
           "CAST(CONVERT('hdfs://nn' USING utf8mb4) AS BINARY)" in text
    assert "char_length(loc) = 18" in text


def test_sql_match_compares_exactly_on_postgresql() -> None:
    text = _sql(sql_match(sa.column("loc", sa.String), "hdfs://nn:8020/w"), postgresql.dialect())
    assert "lower((SUBSTRING(loc FROM 1 FOR 9)) COLLATE \"C\")" in text
    assert "(SUBSTRING(loc FROM 10 FOR 7)) COLLATE \"C\" = (':8020/w') COLLATE \"C\"" in text


def test_sql_rewrite_has_one_branch_per_spelling() -> None:
    text = _sql(sql_rewrite(sa.column("loc", sa.String), "file:/data", "hdfs://nn/x/"), postgresql.dialect())
    assert text.count("WHEN") == 2
    assert "concat('hdfs://nn/x', SUBSTRING(loc FROM 11))" in text
    assert "concat('hdfs://nn/x', SUBSTRING(loc FROM 13))" in text
    assert text.endswith("ELSE loc END")


def test_sql_functions_refuse_invalid_prefixes() -> None:
    with pytest.raises(InvalidLocation):
        sql_match(sa.column("loc"), "/data")
    with pytest.raises(InvalidLocation):
        sql_rewrite(sa.column("loc"), "file:/data", "file:/")
