"""`hivecat distcp` on a real HDFS (Hadoop 3.4.1 MiniDFSCluster) through WebHDFS: round trips local <-> HDFS,
HDFS -> HDFS and HDFS <-> S3, no-change reruns, the rename commit, and a copier killed mid-run.

Everything written is read back through the cluster's own WebHDFS client (HdfsCluster.read), never through
the backend under test. One cluster serves the whole module (each test under its own directory)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from pyarrow import fs as pafs
from support.copy_trees import read_tree, uri, write_tree
from support.hdfs import HdfsCluster, hadoop_jar_dir  # noqa: F401  (fixture by name)

from hivecat.copy import Copier, CopyOptions, LocalEngine, S3Settings, Storage, single_unit_plan
from hivecat.copy.commit import StagingMismatch, commit_by_rename
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.manifest import MANIFEST_NAME, manifest_from_document
from hivecat.copy.staging import LEASE_NAME
from hivecat.copy.storage import WebHdfsSettings, parse_uri

# Hive-style names: '=' and a %XX escape kept literally, as HDFS keeps them
FILES = {"part-0.parquet": os.urandom(300_000), "dt=2026-11-01%3A00/part-1": os.urandom(5_000),
         "nested/deeper/part-2": b"p2" * 1000, "_SUCCESS": b""}
SLOW_FILES = {f"part-{i}.parquet": os.urandom(200_000) for i in range(4)}


@pytest.fixture(scope="module")
def hdfs(hadoop_jar_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    cluster = HdfsCluster(tmp_path_factory.mktemp("hdfs"), jars=hadoop_jar_dir)
    try:
        cluster.start(format=True)
    except (RuntimeError, TimeoutError, FileNotFoundError) as exc:
        pytest.fail(f"HDFS could not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def env(hdfs: HdfsCluster, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The RPC authority in the URIs mapped to the namenode's HTTP port, for this process and the CLI's."""
    monkeypatch.setenv("HIVECAT_WEBHDFS_ENDPOINTS", f"{hdfs.authority}=http://127.0.0.1:{hdfs.http_port}")
    monkeypatch.setenv("HADOOP_USER_NAME", "hivecat")
    return dict(os.environ)


def cli(env: dict[str, str], source: str, target: str, *extra: str, timeout: float = 120) -> str:
    result = subprocess.run([sys.executable, "-m", "hivecat", "distcp", "--from", source, "--to", target,
                             "--engine", "local", *extra], capture_output=True, text=True, env=env, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return result.stdout


def hdfs_tree(hdfs: HdfsCluster, root: str, with_manifest: bool = False) -> dict[str, bytes]:
    """Every file below `root` by relative path, read through the cluster's WebHDFS."""
    found: dict[str, bytes] = {}

    def walk(directory: str, prefix: str) -> None:
        for status in hdfs.list_status(quote(directory)):
            name = status["pathSuffix"]
            if status["type"] == "DIRECTORY":
                walk(f"{directory}/{name}", f"{prefix}{name}/")
            elif with_manifest or prefix + name != MANIFEST_NAME:
                found[prefix + name] = hdfs.read(quote(f"{directory}/{name}"))

    walk(root, "")
    return found


def names(hdfs: HdfsCluster, directory: str) -> list[str]:
    return sorted(s["pathSuffix"] for s in hdfs.list_status(quote(directory)))


def test_cli_round_trips_local_hdfs_hdfs_local(hdfs: HdfsCluster, env: dict[str, str], tmp_path: Path) -> None:
    write_tree(tmp_path / "src", FILES)
    into = f"{hdfs.uri}/rt/warehouse/t"
    assert "files copied 4" in cli(env, uri(tmp_path / "src"), into)
    assert hdfs_tree(hdfs, "/rt/warehouse/t") == FILES
    manifest = json.loads(hdfs.read(f"/rt/warehouse/t/{MANIFEST_NAME}"))
    assert {f["path"] for f in manifest["files"]} == set(FILES)
    assert names(hdfs, "/rt/warehouse") == ["t"]  # no staging left behind
    assert "files copied 0" in cli(env, uri(tmp_path / "src"), into)  # no-change rerun

    within = f"{hdfs.uri}/rt/replica/t"
    assert "files copied 4" in cli(env, into, within, "--verify", "checksum")
    assert hdfs_tree(hdfs, "/rt/replica/t") == FILES
    assert "files copied 0" in cli(env, into, within)

    assert "files copied 4" in cli(env, within, uri(tmp_path / "back"), "--verify", "checksum")
    assert read_tree(tmp_path / "back") == FILES
    assert "files copied 0" in cli(env, within, uri(tmp_path / "back"))


def test_update_commits_a_new_unit_by_rename(hdfs: HdfsCluster, env: dict[str, str], tmp_path: Path) -> None:
    write_tree(tmp_path / "src", FILES)
    target = f"{hdfs.uri}/upd/t"
    cli(env, uri(tmp_path / "src"), target)
    before = hdfs.webhdfs("GETFILESTATUS", "/upd/t")["FileStatus"]["fileId"]
    (tmp_path / "src" / "part-0.parquet").write_bytes(b"changed")
    (tmp_path / "src" / "_SUCCESS").unlink()
    out = cli(env, uri(tmp_path / "src"), target, "--delete")
    assert "files copied 1" in out and "deleted 1" in out
    expected = {**FILES, "part-0.parquet": b"changed"}
    del expected["_SUCCESS"]
    assert hdfs_tree(hdfs, "/upd/t") == expected
    # another directory now: the staged unit was renamed in whole, not written into the old one
    assert hdfs.webhdfs("GETFILESTATUS", "/upd/t")["FileStatus"]["fileId"] != before
    assert names(hdfs, "/upd") == ["t"]  # neither the old unit (renamed aside) nor staging remains


def test_unverified_staging_is_never_committed(hdfs: HdfsCluster, env: dict[str, str], tmp_path: Path) -> None:
    write_tree(tmp_path / "src", FILES)
    cli(env, uri(tmp_path / "src"), f"{hdfs.uri}/guard/t")
    old = hdfs_tree(hdfs, "/guard/t", with_manifest=True)
    storage = Storage()
    target = parse_uri(f"{hdfs.uri}/guard/t")
    staging = parse_uri(f"{hdfs.uri}/guard/{STAGING_PREFIX}x/t")
    filesystem = storage.filesystem(target)
    filesystem.create_dir(staging.path, recursive=True)
    with filesystem.open_output_stream(staging.child("part-0.parquet").path) as out:
        out.write(b"short")  # not the size the manifest records
    manifest = manifest_from_document(json.loads(old[MANIFEST_NAME]))
    with pytest.raises(StagingMismatch):
        commit_by_rename(filesystem, staging, target, manifest)
    assert hdfs_tree(hdfs, "/guard/t", with_manifest=True) == old


def test_renames_never_replace_and_large_directories_list_whole(hdfs: HdfsCluster, env: dict[str, str]) -> None:
    filesystem = Storage().filesystem(parse_uri(f"{hdfs.uri}/ren"))
    for name in ("a", "b"):
        filesystem.create_dir(f"/ren/{name}", recursive=True)
        with filesystem.open_output_stream(f"/ren/{name}/f") as out:
            out.write(name.encode())
    with pytest.raises(FileExistsError):
        filesystem.move("/ren/a", "/ren/b")  # HDFS's plain rename would move a *into* b
    with pytest.raises(FileExistsError):
        filesystem.move("/ren/a/f", "/ren/b/f")
    assert names(hdfs, "/ren/b") == ["f"] and hdfs.read("/ren/b/f") == b"b"
    filesystem.move("/ren/a", "/ren/c")
    assert names(hdfs, "/ren") == ["b", "c"] and hdfs.read("/ren/c/f") == b"a"
    # more entries than one LISTSTATUS_BATCH page (dfs.ls.limit, 1000)
    for i in range(1100):
        hdfs.webhdfs("MKDIRS", f"/big/d{i:04d}", method="PUT")
    listed = filesystem.get_file_info(pafs.FileSelector("/big"))
    assert sorted(info.base_name for info in listed) == [f"d{i:04d}" for i in range(1100)]


def test_hdfs_to_s3_and_back(hdfs: HdfsCluster, env: dict[str, str], moto, tmp_path: Path) -> None:
    s3 = moto.client("s3")
    s3.create_bucket(Bucket="lake")
    write_tree(tmp_path / "src", FILES)
    storage = Storage(S3Settings.from_environment(), WebHdfsSettings.from_environment())

    def copy(source: str, target: str) -> dict:
        plan = single_unit_plan(source, target)
        return Copier(plan, CopyOptions(verify="checksum"), storage, LocalEngine(4)).run().to_dict()["totals"]

    copy(uri(tmp_path / "src"), f"{hdfs.uri}/s3rt/t")
    assert copy(f"{hdfs.uri}/s3rt/t", "s3://lake/t")["files_copied"] == 4
    got = {o["Key"][2:]: s3.get_object(Bucket="lake", Key=o["Key"])["Body"].read()
           for o in s3.list_objects_v2(Bucket="lake", Prefix="t/")["Contents"]}
    got.pop(MANIFEST_NAME)
    assert got == FILES
    assert copy("s3://lake/t", f"{hdfs.uri}/s3rt/back")["files_copied"] == 4
    assert hdfs_tree(hdfs, "/s3rt/back") == FILES
    assert copy("s3://lake/t", f"{hdfs.uri}/s3rt/back")["files_copied"] == 0


# --- a copier killed mid-run (as test_distcp_crash.py, with HDFS as the target) ----------------------

def staged_data(hdfs: HdfsCluster, parent: str) -> list[str]:
    """Data files (not the lease) in the staging roots below `parent`; a file being written through
    WebHDFS lists with length 0 until its block completes, so its presence is what counts."""
    found = []

    def walk(directory: str) -> None:
        for status in hdfs.list_status(quote(directory)):
            path = f"{directory}/{status['pathSuffix']}"
            if status["type"] == "DIRECTORY":
                walk(path)
            elif status["pathSuffix"] != LEASE_NAME:
                found.append(path)

    for name in names(hdfs, parent) if hdfs.exists(quote(parent)) else []:
        if name.startswith(STAGING_PREFIX):
            walk(f"{parent}/{name}")
    return found


def kill_mid_copy(env: dict[str, str], source: Path, target: str, parent: str, hdfs: HdfsCluster) -> None:
    # 0.1 MB/s per task, two tasks: about 4 s in all, so it is surely killed mid-copy
    process = subprocess.Popen([sys.executable, "-m", "hivecat", "distcp", "--from", uri(source), "--to", target,
                                "--engine", "local", "--parallelism", "2", "--bandwidth", "0.1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if staged_data(hdfs, parent):
            time.sleep(0.3)  # some bytes on their way
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)
            return
        assert process.poll() is None, process.stderr.read().decode()
        time.sleep(0.05)
    process.kill()
    raise AssertionError("the copy never staged a file")


def test_killed_first_copy_commits_nothing_and_rerun_completes(hdfs: HdfsCluster, env: dict[str, str],
                                                               tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", SLOW_FILES)
    kill_mid_copy(env, source, f"{hdfs.uri}/crash1/t", "/crash1", hdfs)
    assert not hdfs.exists("/crash1/t")  # absent, not half-present
    assert names(hdfs, "/crash1")[0].startswith(STAGING_PREFIX)
    assert "files copied 4" in cli(env, uri(source), f"{hdfs.uri}/crash1/t")
    assert hdfs_tree(hdfs, "/crash1/t") == SLOW_FILES
    assert names(hdfs, "/crash1") == ["t"]  # the dead run's staging cleaned


def test_killed_replacement_keeps_the_old_unit_whole(hdfs: HdfsCluster, env: dict[str, str], tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", SLOW_FILES)
    cli(env, uri(source), f"{hdfs.uri}/crash2/t")
    old = hdfs_tree(hdfs, "/crash2/t", with_manifest=True)
    changed = {name: os.urandom(200_000) for name in SLOW_FILES}
    write_tree(source, changed)
    kill_mid_copy(env, source, f"{hdfs.uri}/crash2/t", "/crash2", hdfs)
    assert hdfs_tree(hdfs, "/crash2/t", with_manifest=True) == old
    assert "files copied 4" in cli(env, uri(source), f"{hdfs.uri}/crash2/t")
    assert hdfs_tree(hdfs, "/crash2/t") == changed
    assert names(hdfs, "/crash2") == ["t"]


def test_many_small_files_into_hdfs(hdfs: HdfsCluster, env: dict[str, str], tmp_path: Path) -> None:
    """200 x 256 KiB, local -> HDFS (the time is printed, not asserted)."""
    files = {f"part-{i:03d}": os.urandom(256 * 1024) for i in range(200)}
    write_tree(tmp_path / "src", files)
    began = time.monotonic()
    out = cli(env, uri(tmp_path / "src"), f"{hdfs.uri}/many/t", "--parallelism", "8", timeout=600)
    print(f"200 x 256 KiB local -> HDFS: {time.monotonic() - began:.2f} s (CLI, --parallelism 8)")
    assert "files copied 200" in out
    assert len(hdfs.list_status("/many/t")) == 201  # and the manifest
    assert hdfs.read("/many/t/part-123") == files["part-123"]


def test_spark_executors_copy_into_hdfs_with_the_drivers_settings(hdfs: HdfsCluster, env: dict[str, str], spark,
                                                                  tmp_path: Path) -> None:
    """The endpoint mapping is set in this (the driver's) process only, after Spark started: executors
    reach the namenode through the settings pickled with the Storage, not their own environment."""
    from hivecat.copy import SparkEngine

    write_tree(tmp_path / "src", FILES)
    plan = single_unit_plan(uri(tmp_path / "src"), f"{hdfs.uri}/spark/t")
    summary = Copier(plan, CopyOptions(verify="checksum"), Storage(), SparkEngine(spark, parallelism=2)).run()
    assert summary.to_dict()["totals"]["files_copied"] == 4
    assert hdfs_tree(hdfs, "/spark/t") == FILES
