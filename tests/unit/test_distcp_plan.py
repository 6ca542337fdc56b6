"""URIs, overlaps and S3 settings: bad input is refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import Unit, check_overlaps, single_unit_plan
from hivecat.copy.storage import CREDENTIALS_DIR_ENV, Location, S3Settings, parse_uri


@pytest.mark.parametrize(("uri", "expected"), [
    ("/data/t", Location("file", "", "/data/t")),
    ("file:///data/t/", Location("file", "", "/data/t")),
    ("/data/t/../u", Location("file", "", "/data/u")),
    ("s3://lake/warehouse/t/", Location("s3", "lake", "lake/warehouse/t")),
    ("s3a://lake/warehouse/t", Location("s3", "lake", "lake/warehouse/t")),
    ("hdfs://nn:8020/warehouse/t", Location("hdfs", "nn:8020", "/warehouse/t")),
])
def test_uris_parse_to_locations(uri: str, expected: Location) -> None:
    assert parse_uri(uri) == expected


@pytest.mark.parametrize(("uri", "message"), [
    ("gs://b/k", "unsupported scheme"), ("s3://lake", "not whole buckets"), ("s3:///k", "no bucket"),
    ("hdfs:///warehouse", "namenode"),
])
def test_bad_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(CopyInputError, match=message):
        parse_uri(uri)


@pytest.mark.parametrize(("source", "target", "message"), [
    ("/data/t", "/data/t/copy", "inside source"),
    ("/data/t/dt=1", "/data", "inside target"),
    ("/data/t", "/data/t", "inside"),
    ("s3://lake/t", "s3://lake/t/x", "inside source"),
])
def test_overlapping_source_and_target_are_refused(source: str, target: str, message: str) -> None:
    with pytest.raises(CopyInputError, match=message):
        single_unit_plan(source, target)


@pytest.mark.parametrize(("source", "target"), [
    ("/data/t", "/data/t2"), ("s3://lake/t", "s3://lake/t2"), ("s3://lake/t", "s3://other/t"),
    ("/data/t", "s3://data/t"),
])
def test_siblings_and_other_filesystems_do_not_overlap(source: str, target: str) -> None:
    assert single_unit_plan(source, target).units[0].target == parse_uri(target)


def test_symlinked_target_inside_source_is_seen_through(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "src")
    with pytest.raises(CopyInputError, match="inside source"):
        single_unit_plan(str(tmp_path / "src"), str(tmp_path / "alias" / "copy"))


def test_units_may_not_nest_or_repeat() -> None:
    a = Unit("a", parse_uri("/src/a"), parse_uri("/dst/t"))
    b = Unit("b", parse_uri("/src/b"), parse_uri("/dst/t/dt=1"))
    with pytest.raises(CopyInputError, match="inside target"):
        check_overlaps((a, b))
    with pytest.raises(CopyInputError, match="unique"):
        check_overlaps((a, Unit("a", parse_uri("/src/c"), parse_uri("/dst/c"))))


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


def test_unreadable_credentials_are_bad_input(tmp_path: Path) -> None:
    (tmp_path / "access-key-id").write_text("k")
    with pytest.raises(CopyInputError, match="secret-access-key is missing"):
        S3Settings.from_environment({CREDENTIALS_DIR_ENV: str(tmp_path)})
    (tmp_path / "secret-access-key").mkdir()  # unreadable as a file, even for root
    with pytest.raises(CopyInputError, match="cannot read .*secret-access-key"):
        S3Settings.from_environment({CREDENTIALS_DIR_ENV: str(tmp_path)})
