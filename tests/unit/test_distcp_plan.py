"""URIs, overlaps and S3 settings: bad input is refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.copy_trees import read_tree, write_tree
from support.copy_trees import uri as file_uri

from hivecat.copy import Copier, LocalEngine
from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import Unit, check_overlaps, plan_from_document, single_unit_plan
from hivecat.copy import s3copy
from hivecat.copy.storage import CREDENTIALS_DIR_ENV, Location, S3Settings, parse_uri, relative_path_refusal


@pytest.mark.parametrize(("uri", "expected"), [
    ("file:/data/t", Location("file", "", "/data/t")),
    ("file:///data/t/", Location("file", "", "/data/t")),
    ("file:///data/t/../u", Location("file", "", "/data/u")),
    ("file:///data/a#b?c=1", Location("file", "", "/data/a#b?c=1")),  # literal, as Hadoop: no fragment or query
    ("s3://lake/warehouse/t/", Location("s3", "lake", "lake/warehouse/t")),
    ("s3a://lake/warehouse/t", Location("s3", "lake", "lake/warehouse/t")),
    ("hdfs://nn:8020/warehouse/t", Location("hdfs", "nn:8020", "/warehouse/t")),
    ("hdfs://nn:8020//warehouse//t/", Location("hdfs", "nn:8020", "/warehouse/t")),
])
def test_uris_parse_to_locations(uri: str, expected: Location) -> None:
    assert parse_uri(uri) == expected


@pytest.mark.parametrize(("uri", "message"), [
    ("gs://b/k", "unsupported scheme"), ("s3://lake", "not whole buckets"), ("s3:///k", "no bucket"),
    ("hdfs:///warehouse", "namenode"), ("viewfs://ns/x", "unsupported scheme"),
    ("/data/t", "'/data/t' is a bare path (no URI scheme); write it as a URI: file:///data/t"),
    ("data/t", "'data/t' is a bare path (no URI scheme); write it as a URI with an absolute path: file:///…/data/t"),
    ("file:data/t", "'file:data/t' is a relative path"), ("1s3://lake/t", "no URI scheme"),
    ("file:///a\0b", "a control character (U+0000)"), ("s3://la\x01ke/t", "a control character (U+0001)"),
    ("hdfs://nn:8020/a\nb", "a control character (U+000A)"),
])
def test_bad_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(CopyInputError) as raised:
        parse_uri(uri)
    assert message in str(raised.value)


def test_bare_paths_are_refused_in_the_words_of_hivecat_relocate() -> None:
    from hivecat.locations.prefix import InvalidLocation, parse_prefix

    for path in ("/tmp/x", "tmp/x", "file:tmp/x"):
        with pytest.raises(CopyInputError) as copy_refusal:
            parse_uri(path)
        with pytest.raises(InvalidLocation) as relocate_refusal:
            parse_prefix(path)
        assert str(copy_refusal.value) == str(relocate_refusal.value)
        assert relocate_refusal.value.reason == "invalid-uri"


@pytest.mark.parametrize(("relative", "refused"), [
    ("part-0", False), ("dt=1/part-0", False), ("a..b/.c/..d", False), ("/tmp/x", True), ("a//b", True),
    ("a/", True), ("", True), (".", True), ("./a", True), ("a/./b", True), ("..", True), ("a/../../b", True),
    ("a\0b", True),
])
def test_listed_paths_must_be_paths_inside_the_unit(relative: str, refused: bool) -> None:
    assert (relative_path_refusal(relative) is not None) == refused


def test_children_stay_below_their_location_and_s3_objects_in_their_bucket() -> None:
    unit = parse_uri("s3://lake/t/dt=1")
    assert unit.child("/x").path == "lake/t/dt=1//x"  # the very key the listing found, not `/x`
    assert parse_uri("file:///").child("x").path == "/x"

    class NoClient:
        def __getattr__(self, name: str):
            raise AssertionError(f"S3 called: {name}")

    for stray in (Location("s3", "lake", "/x"), Location("s3", "lake", "other/x"), Location("s3", "lake", "lake")):
        with pytest.raises(ValueError, match="is not an object of bucket 'lake'"):
            s3copy.delete_objects(NoClient(), [stray])


def test_refusals_name_the_flag_or_the_unit() -> None:
    with pytest.raises(CopyInputError, match="^--to '/tmp/x' is a bare path"):
        single_unit_plan("file:///data/t", "/tmp/x", roles=("--from", "--to"))
    with pytest.raises(CopyInputError, match="^unit 'u': source 'gs://b/k': unsupported scheme"):
        plan_from_document({"version": 1, "units": [{"id": "u", "source": "gs://b/k", "target": "file:///t"}]})


@pytest.mark.parametrize(("source", "target", "message"), [
    ("file:///data/t", "file:///data/t/copy", "inside source"),
    ("file:///data/t/dt=1", "file:///data", "inside target"),
    ("file:///data/t", "file:/data/t/", "source and target are the same location: file:///data/t"),
    ("s3://lake/t", "s3a://lake/t", "source and target are the same location: s3://lake/t"),
    ("s3://lake/t", "s3://lake/t/x", "inside source"),
])
def test_overlapping_source_and_target_are_refused(source: str, target: str, message: str) -> None:
    with pytest.raises(CopyInputError) as raised:
        single_unit_plan(source, target)
    assert message in str(raised.value)


@pytest.mark.parametrize(("source", "target"), [
    ("file:///data/t", "file:///data/t2"), ("s3://lake/t", "s3://lake/t2"), ("s3://lake/t", "s3://other/t"),
    ("file:///data/t", "s3://data/t"),
])
def test_siblings_and_other_filesystems_do_not_overlap(source: str, target: str) -> None:
    assert single_unit_plan(source, target).units[0].target == parse_uri(target)


def test_a_target_through_a_link_to_its_source_writes_nothing_there(tmp_path: Path) -> None:
    """Paths are not resolved, so the plan cannot see the overlap; the target, which passes through a link, is
    refused when it is used, and nothing is written into the source."""
    write_tree(tmp_path / "src", {"a": b"1"})
    (tmp_path / "alias").symlink_to(tmp_path / "src")
    plan = single_unit_plan(file_uri(tmp_path / "src"), file_uri(tmp_path / "alias" / "copy"))
    unit = Copier(plan, engine=LocalEngine(2)).run().units[0]
    assert unit.status == "failed"
    assert unit.reason == (f"{file_uri(tmp_path / 'alias' / 'copy')}: the unit's directory passes through a "
                           f"symbolic link at {tmp_path / 'alias'}; links are never followed")
    assert read_tree(tmp_path / "src", with_manifest=True) == {"a": b"1"}
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == ["a"]  # no staging either


def test_units_may_not_nest_or_repeat() -> None:
    a = Unit("a", parse_uri("file:///src/a"), parse_uri("file:///dst/t"))
    b = Unit("b", parse_uri("file:///src/b"), parse_uri("file:///dst/t/dt=1"))
    with pytest.raises(CopyInputError, match="inside target"):
        check_overlaps((a, b))
    with pytest.raises(CopyInputError, match="unique"):
        check_overlaps((a, Unit("a", parse_uri("file:///src/c"), parse_uri("file:///dst/c"))))


def test_s3_settings_from_environment_and_secret_files(tmp_path: Path) -> None:
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "env-key",
           "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_DEFAULT_REGION": "eu-west-1"}
    settings = S3Settings.from_environment(env)
    assert (settings.endpoint, settings.region, settings.access_key) == ("http://127.0.0.1:9", "eu-west-1", "env-key")
    assert "env-secret" not in repr(settings) and "env-key" not in repr(settings)
    (tmp_path / "access-key-id").write_text("file-key\n")
    (tmp_path / "secret-access-key").write_text("file-secret\n")
    from_files = S3Settings.from_environment({**env, CREDENTIALS_DIR_ENV: str(tmp_path)})
    assert (from_files.access_key, from_files.secret_key, from_files.session_token) == ("file-key", "file-secret", None)


def test_a_secret_with_the_aws_variable_names_works_mounted_as_files(tmp_path: Path) -> None:
    """A ClusterStorage's credentials Secret holds AWS_ACCESS_KEY_ID and friends (its CRD says so): mounted
    whole, as the copy Job and SparkApplication do, its files are read under those names too."""
    for name, value in (("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s"), ("AWS_SESSION_TOKEN", "t")):
        (tmp_path / name).write_text(value)
    settings = S3Settings.from_environment({CREDENTIALS_DIR_ENV: str(tmp_path)})
    assert (settings.access_key, settings.secret_key, settings.session_token) == ("k", "s", "t")


def test_unreadable_credentials_are_bad_input(tmp_path: Path) -> None:
    (tmp_path / "access-key-id").write_text("k")
    with pytest.raises(CopyInputError, match="secret-access-key is missing"):
        S3Settings.from_environment({CREDENTIALS_DIR_ENV: str(tmp_path)})
    (tmp_path / "secret-access-key").mkdir()  # unreadable as a file, even for root
    with pytest.raises(CopyInputError, match="cannot read .*secret-access-key"):
        S3Settings.from_environment({CREDENTIALS_DIR_ENV: str(tmp_path)})
