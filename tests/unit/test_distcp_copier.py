"""The copier on local disks: -update semantics, verification, per-unit atomic commit, resumability."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import crc32c
import pytest
from support.copy_trees import read_manifest, read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, S3Settings, Storage
from hivecat.copy import local_paths
from hivecat.copy.documents import UNIT_MANIFEST, validate
from hivecat.copy.engines import SMALL_PLAN_BYTES_PER_CORE, balanced_batches, batch_count
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.plan import plan_from_document, single_unit_plan
from hivecat.copy.storage import CREDENTIALS_DIR_ENV
from hivecat.copy.transfer import FileTask, TransferOptions

FILES = {"part-0.parquet": os.urandom(70_000), "part-1.parquet": b"x" * 1000, "_SUCCESS": b"",
         "nested/part-2.parquet": os.urandom(5000)}


def copy(source: Path, target: Path, **options) -> dict:
    summary = Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(**options),
                     engine=LocalEngine(4)).run()
    return summary.to_dict()


def test_copies_byte_for_byte_with_a_valid_manifest(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    summary = copy(source, tmp_path / "dst" / "t")
    assert read_tree(tmp_path / "dst" / "t") == FILES
    manifest = read_manifest(tmp_path / "dst" / "t")
    validate(UNIT_MANIFEST, manifest)
    assert {f["path"]: f["size"] for f in manifest["files"]} == {k: len(v) for k, v in FILES.items()}
    assert {f["source_mtime_ns"] for f in manifest["files"] if f["path"] == "_SUCCESS"} == \
        {(source / "_SUCCESS").stat().st_mtime_ns}
    assert summary["totals"]["files_copied"] == 4 and summary["totals"]["bytes_copied"] == 76_000
    assert [p.name for p in (tmp_path / "dst").iterdir()] == ["t"]  # staging removed
    assert read_tree(source, with_manifest=True) == FILES  # the source is untouched


def test_unchanged_rerun_copies_nothing_and_touches_nothing(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "dst"
    copy(source, target)
    before = {p: p.stat().st_ino for p in target.rglob("*")}
    summary = copy(source, target)
    assert summary["units"][0]["status"] == "skipped"
    assert summary["totals"]["files_copied"] == 0 and summary["totals"]["files_skipped"] == 4
    assert {p: p.stat().st_ino for p in target.rglob("*")} == before


def test_changed_file_alone_is_recopied_and_the_rest_keeps_its_manifest_entries(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "dst"
    copy(source, target)
    first = {f["path"]: f for f in read_manifest(target)["files"]}
    (source / "part-1.parquet").write_bytes(b"y" * 1001)
    summary = copy(source, target)
    assert summary["totals"]["files_copied"] == 1 and summary["totals"]["bytes_copied"] == 1001
    assert read_tree(target) == {**FILES, "part-1.parquet": b"y" * 1001}
    second = {f["path"]: f for f in read_manifest(target)["files"]}
    assert second["part-1.parquet"]["run_id"] == summary["run_id"] != first["part-1.parquet"]["run_id"]
    assert {p: second[p] for p in second if p != "part-1.parquet"} == \
        {p: first[p] for p in first if p != "part-1.parquet"}


def test_same_size_and_mtime_is_up_to_date_by_size_but_recopied_by_checksum(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "dst"
    copy(source, target)
    stat = (source / "part-1.parquet").stat()
    (source / "part-1.parquet").write_bytes(b"z" * 1000)  # same size ...
    os.utime(source / "part-1.parquet", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ... and same mtime
    assert copy(source, target)["totals"]["files_copied"] == 0
    assert (target / "part-1.parquet").read_bytes() == b"x" * 1000
    summary = copy(source, target, verify="checksum")
    assert summary["totals"]["files_copied"] == 1 and summary["totals"]["files_skipped"] == 3
    assert (target / "part-1.parquet").read_bytes() == b"z" * 1000
    checksums = {f["path"]: f["checksum"] for f in read_manifest(target)["files"]}
    # CRC32C of the whole file (as HDFS COMPOSITE_CRC and S3 full-object checksums define it)
    assert checksums == {path: f"crc32c:{crc32c.crc32c((target / path).read_bytes()):08x}" for path in FILES}


def test_a_target_without_manifest_counts_as_absent(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = write_tree(tmp_path / "dst", {**FILES, "stray.txt": b"old"})
    summary = copy(source, target)
    assert summary["totals"]["files_copied"] == 4
    assert read_tree(target) == {**FILES, "stray.txt": b"old"}  # kept: --delete is off by default


def test_delete_removes_target_only_files_inside_the_unit_only(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "dst" / "t"
    copy(source, target)
    write_tree(target, {"stray.txt": b"old", "nested/stray": b"old"})
    (tmp_path / "dst" / "neighbour.txt").write_bytes(b"not in any unit")
    assert copy(source, target)["totals"]["files_deleted"] == 0
    assert "stray.txt" in read_tree(target)
    summary = copy(source, target, delete=True)
    assert summary["totals"]["files_deleted"] == 2 and summary["totals"]["files_copied"] == 0
    assert read_tree(target) == FILES
    assert (tmp_path / "dst" / "neighbour.txt").read_bytes() == b"not in any unit"


def test_dry_run_reports_and_writes_nothing(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", FILES)
    summary = copy(source, tmp_path / "dst" / "t", dry_run=True)
    assert summary["units"][0]["status"] == "done" and summary["totals"]["files_copied"] == 4
    assert not (tmp_path / "dst").exists()


def test_stale_staging_of_a_crashed_run_is_removed(tmp_path: Path) -> None:
    """Without a lease (an older hivecat's): once untouched for a lease term; leases: test_distcp_staging."""
    source = write_tree(tmp_path / "src", FILES)
    stale = write_tree(tmp_path / "dst" / f"{STAGING_PREFIX}20200101T000000Z-dead00" / "t", {"half": b"x"})
    for path in (stale / "half", stale, stale.parent):
        os.utime(path, (1_577_836_800, 1_577_836_800))  # 2020-01-01
    copy(source, tmp_path / "dst" / "t")
    assert not stale.parent.exists()
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["t"]


def test_a_unit_with_a_missing_expected_file_fails_alone(tmp_path: Path) -> None:
    write_tree(tmp_path / "src" / "a", FILES)
    write_tree(tmp_path / "src" / "b", FILES)
    plan = plan_from_document({"version": 1, "units": [
        {"id": "a", "source": uri(tmp_path / "src" / "a"), "target": uri(tmp_path / "dst" / "a"),
         "expected_files": ["part-0.parquet", "part-9.parquet"]},
        {"id": "b", "source": uri(tmp_path / "src" / "b"), "target": uri(tmp_path / "dst" / "b")}]})
    summary = Copier(plan, engine=LocalEngine(2)).run().to_dict()
    assert [(u["id"], u["status"]) for u in summary["units"]] == [("a", "failed"), ("b", "done")]
    assert "part-9.parquet" in summary["units"][0]["reason"] and summary["status"] == "failed"
    assert not (tmp_path / "dst" / "a").exists() and read_tree(tmp_path / "dst" / "b") == FILES


def test_a_failed_copy_commits_nothing_and_keeps_the_old_unit(tmp_path: Path, monkeypatch) -> None:
    source = write_tree(tmp_path / "src", FILES)
    target = tmp_path / "dst"
    copy(source, target)
    old = read_tree(target, with_manifest=True)
    (source / "part-0.parquet").write_bytes(b"new")
    import hivecat.copy.transfer as transfer

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(transfer, "_kernel_copy", broken)
    summary = copy(source, target)
    assert summary["status"] == "failed" and "disk full" in summary["units"][0]["reason"]
    assert read_tree(target, with_manifest=True) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst", "src"]  # staging removed


def test_replacing_a_unit_never_shows_it_missing_or_mixed(tmp_path: Path) -> None:
    """A reader polls the unit while it is replaced again and again: every look sees one whole version."""
    source, target = tmp_path / "src", tmp_path / "dst"
    versions = 12

    def version_files(v: int) -> dict[str, bytes]:  # the file set changes too, not only the contents
        return {"common": b"v%d" % v, f"only-{v % 3}": b"v%d" % v, "nested/deep": b"v%d" % v}

    write_tree(source, version_files(0))
    copy(source, target, delete=True)
    looks, violations, stop = [0], [], threading.Event()

    def look() -> None:
        try:
            fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            violations.append("missing")
            return
        try:
            inode = os.fstat(fd).st_ino
            files = read_tree(Path(f"/proc/self/fd/{fd}"), with_manifest=True)
        except FileNotFoundError:  # the old version, deleted under an open handle after the commit
            return
        finally:
            os.close(fd)
        try:
            # A look that straddled a commit read the old version while it was being deleted:
            # count only looks at the directory that was the unit before and after reading.
            if os.stat(target).st_ino != inode:
                return
        except FileNotFoundError:
            violations.append("missing")
            return
        manifest = json.loads(files.pop(MANIFEST_NAME))
        tags = set(files.values())
        if len(tags) != 1 or files != version_files(int(tags.pop()[1:])) or \
                sorted(f["path"] for f in manifest["files"]) != sorted(files):
            violations.append(f"mixed: {sorted(files.items())}")
        looks[0] += 1

    def reader() -> None:
        while not stop.is_set():
            try:
                look()
            except Exception as exc:  # noqa: BLE001 - a reader that dies must fail the test, not pass it
                violations.append(repr(exc))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for v in range(1, versions):
            for old in list(read_tree(source)):
                (source / old).unlink()
            write_tree(source, version_files(v))
            copy(source, target, delete=True)
    finally:
        stop.set()
        thread.join()
    assert read_tree(target) == version_files(versions - 1)
    assert violations == [] and looks[0] > versions


def test_exchange_swaps_two_directories(tmp_path: Path) -> None:
    a, b = write_tree(tmp_path / "a", {"x": b"a"}), write_tree(tmp_path / "b", {"y": b"b"})
    assert local_paths.exchange(str(a), str(b))
    assert read_tree(a) == {"y": b"b"} and read_tree(b) == {"x": b"a"}


def test_rename_aside_fallback_replaces_the_unit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(local_paths, "exchange", lambda a, b: False)  # as on HDFS
    source = write_tree(tmp_path / "src", FILES)
    copy(source, tmp_path / "dst" / "t")
    (source / "part-1.parquet").write_bytes(b"changed")
    copy(source, tmp_path / "dst" / "t")
    assert read_tree(tmp_path / "dst" / "t") == {**FILES, "part-1.parquet": b"changed"}
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["t"]


def test_bandwidth_limit_slows_each_task(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", {"big": os.urandom(400_000)})
    summary = copy(source, tmp_path / "dst", bandwidth=1_000_000)  # 1 MB/s: at least 0.4 s
    assert summary["seconds"] >= 0.35 and read_tree(tmp_path / "dst") == read_tree(source)


def test_balanced_batches_spread_bytes() -> None:
    sizes = [100, 90, 50, 40, 10, 10, 0, 0]
    tasks = [FileTask(0, str(i), None, None, s, 0) for i, s in enumerate(sizes)]
    batches = balanced_batches(tasks, 3)
    assert sorted(t.relpath for b in batches for t in b) == sorted(t.relpath for t in tasks)
    assert max(sum(t.size for t in b) for b in batches) <= 110
    # the positions form is the same split, by index (equal tasks stay apart: the local engine maps results back)
    twins = [FileTask(0, "same", None, None, 5, 0) for _ in range(4)]
    for pool in (tasks, twins):
        positions = balanced_batches(pool, 3, positions=True)
        assert [[pool[i] for i in b] for b in positions] == balanced_batches(pool, 3)
        assert sorted(i for b in positions for i in b) == list(range(len(pool)))


def test_spark_runs_one_task_per_core_for_small_plans_and_four_for_large_ones() -> None:
    def tasks(copied: int, carried: int) -> list[FileTask]:
        return [FileTask(0, "a", None, None, copied, 0), FileTask(0, "b", None, None, carried, 0, carry=True)]

    just_under = 2 * SMALL_PLAN_BYTES_PER_CORE - 1
    assert batch_count(tasks(just_under, 0), cores=2) == 2
    assert batch_count(tasks(just_under, 10 * SMALL_PLAN_BYTES_PER_CORE), cores=2) == 2  # hard links: not counted
    assert batch_count(tasks(just_under + 1, 0), cores=2) == 8
    assert batch_count([], cores=3) == 3


def test_source_changed_during_copy_fails_the_unit(tmp_path: Path, monkeypatch) -> None:
    source = write_tree(tmp_path / "src", FILES)
    import hivecat.copy.transfer as transfer

    real = transfer._kernel_copy

    def copy_then_touch(source_fd: int, dest_fd: int) -> None:
        real(source_fd, dest_fd)
        Path(os.readlink(f"/proc/self/fd/{source_fd}")).write_bytes(b"changed meanwhile")

    monkeypatch.setattr(transfer, "_kernel_copy", copy_then_touch)
    summary = copy(source, tmp_path / "dst")
    assert summary["status"] == "failed" and "source changed" in summary["units"][0]["reason"]
    assert not (tmp_path / "dst").exists() or list((tmp_path / "dst").iterdir()) == []


@pytest.mark.parametrize("verify", ["size", "checksum"])
def test_empty_source_unit_commits_an_empty_unit(tmp_path: Path, verify: str) -> None:
    (tmp_path / "src").mkdir()
    copy(tmp_path / "src", tmp_path / "dst", verify=verify)
    assert read_manifest(tmp_path / "dst")["files"] == [] and read_tree(tmp_path / "dst") == {}


# --- hostile manifests fail their own unit ----------------------------------------------------------

def test_a_deeply_nested_or_oversized_manifest_fails_its_own_unit_only(tmp_path: Path) -> None:
    for name in ("deep", "huge", "plain"):
        write_tree(tmp_path / "src" / name, FILES)
    deep = b'{"version":1,"files":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    write_tree(tmp_path / "dst" / "deep", {MANIFEST_NAME: deep, "old": b"kept"})
    # valid JSON, read in full it would be 65 MiB of memory (and ~5x that parsed, were it entries)
    huge = json.dumps({"version": 1, "unit_id": "huge", "source": "file:///x", "run_id": "r",
                       "committed_at": "2026-01-01T00:00:00+00:00", "files": []}).encode()
    huge += b" " * (65 * 1024 * 1024 - len(huge))
    write_tree(tmp_path / "dst" / "huge", {MANIFEST_NAME: huge, "old": b"kept"})
    plan = plan_from_document({"version": 1, "units": [
        {"id": name, "source": uri(tmp_path / "src" / name), "target": uri(tmp_path / "dst" / name)}
        for name in ("deep", "huge", "plain")]})
    tracemalloc.start()
    try:
        summary = Copier(plan, engine=LocalEngine(2)).run().to_dict()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    outcome = {u["id"]: (u["status"], u["reason"]) for u in summary["units"]}
    assert outcome["plain"] == ("done", None) and read_tree(tmp_path / "dst" / "plain") == FILES
    assert outcome["deep"][0] == "failed" and "nested deeper than" in outcome["deep"][1]
    assert outcome["huge"][0] == "failed" and "too large" in outcome["huge"][1]
    assert peak < 16 * 1024 * 1024  # the oversized manifest was refused before it was read
    # never trusted, never overwritten
    assert read_tree(tmp_path / "dst" / "deep", with_manifest=True) == {MANIFEST_NAME: deep, "old": b"kept"}
    assert (tmp_path / "dst" / "huge" / MANIFEST_NAME).stat().st_size == len(huge)


# --- what Spark ships to executors ---------------------------------------------------------------

S3_ENV = {"AWS_ACCESS_KEY_ID": "AKIAHIVECATTESTKEY01", "AWS_SECRET_ACCESS_KEY": "hivecat/secret+value/0123456789",
          "AWS_SESSION_TOKEN": "hivecat-session-token-abcdef", "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
          "AWS_DEFAULT_REGION": "eu-west-1"}
SECRETS = (S3_ENV["AWS_ACCESS_KEY_ID"], S3_ENV["AWS_SECRET_ACCESS_KEY"], S3_ENV["AWS_SESSION_TOKEN"])

RESOLVE_IN_A_FRESH_PROCESS = """
import json, pickle, sys
storage = pickle.loads(sys.stdin.buffer.read())
s3 = storage.s3
print(json.dumps([s3.endpoint, s3.region, s3.access_key, s3.secret_key, s3.session_token]))
"""


def unpickled_elsewhere(data: bytes, environment: dict[str, str]) -> list:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != CREDENTIALS_DIR_ENV}
    result = subprocess.run([sys.executable, "-c", RESOLVE_IN_A_FRESH_PROCESS], input=data, capture_output=True,
                            env={**clean, **environment}, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


def test_pickled_storage_carries_no_s3_secret_and_executors_resolve_it_again(tmp_path: Path) -> None:
    from pyspark import cloudpickle

    storage = Storage(S3Settings.from_environment(S3_ENV))
    for data in (pickle.dumps(storage), cloudpickle.dumps(TransferOptions(storage))):  # Spark: cloudpickle
        assert not [secret for secret in SECRETS if secret.encode() in data]
    assert not [secret for secret in SECRETS if secret in repr(storage)]
    assert unpickled_elsewhere(pickle.dumps(storage), S3_ENV) == ["http://127.0.0.1:9", "eu-west-1", *SECRETS]


def test_credentials_from_a_mounted_secret_travel_as_its_path(tmp_path: Path) -> None:
    (tmp_path / "access-key-id").write_text("AKIAFROMSECRETFILE01\n")
    (tmp_path / "secret-access-key").write_text("secret/from+the/mounted+file\n")
    environment = {CREDENTIALS_DIR_ENV: str(tmp_path), "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    data = pickle.dumps(Storage(S3Settings.from_environment(environment)))
    assert b"AKIAFROMSECRETFILE01" not in data and b"secret/from+the/mounted+file" not in data
    assert unpickled_elsewhere(data, environment) == [
        "http://127.0.0.1:9", "us-east-1", "AKIAFROMSECRETFILE01", "secret/from+the/mounted+file", None]
