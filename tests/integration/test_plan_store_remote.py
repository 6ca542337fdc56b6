"""Plans kept on a secondary's own filesystem when it is remote. On S3 (moto server): a plan over 1 MiB written
whole and read back by its digest, and `hivecat distcp --plan s3://... --plan-digest` run as the copy Job runs
it (credentials from files in $HIVECAT_S3_CREDENTIALS_DIR, never the command line): the right digest copies,
another is refused with exit 2 and nothing written. On HDFS (a real namenode): written by rename, rewritten
in place although HDFS renames never replace, and nothing left beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyarrow import fs as pafs
from support.copy_trees import read_tree, uri, write_tree
from support.hdfs import HdfsCluster, hadoop_jar_dir, hdfs_cluster  # noqa: F401  (fixtures by name)

from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import CopyPlan, Unit, single_unit_plan
from hivecat.copy.plan_store import plan_location, read_plan, write_plan
from hivecat.copy.storage import CREDENTIALS_DIR_ENV, S3Settings, Storage, WebHdfsSettings, parse_uri

HIVECAT = Path(sys.executable).parent / "hivecat"


@pytest.fixture
def dr(moto):
    s3 = moto.client("s3")
    s3.create_bucket(Bucket="dr-copy")
    return s3


def keys(s3, bucket: str) -> list[str]:
    return [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", [])]


def job_environment(tmp_path: Path) -> dict[str, str]:
    """The environment a copy Job's container has: the Secret's files, the store's endpoint; no AWS keys."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "access-key-id").write_text("testing")
    (secret / "secret-access-key").write_text("testing")
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    return {**env, CREDENTIALS_DIR_ENV: str(secret)}


def test_a_plan_over_a_mebibyte_on_s3_reads_back_by_its_digest(dr) -> None:
    table = "warehouse/sales.db/orders"
    plan = CopyPlan(tuple(Unit(f"sales.orders/dt={i:05d}", parse_uri(f"hdfs://nn:8020/{table}/dt={i:05d}"),
                               parse_uri(f"s3://dr-copy/{table}/dt={i:05d}")) for i in range(20_000)))
    location = plan_location("s3://dr-copy/warehouse", "data", "orders", "run-1")
    storage = Storage(S3Settings.from_environment())
    digest = write_plan(storage, location, plan)
    assert keys(dr, "dr-copy") == ["warehouse/.hivecat/plans/data/orders/run-1.json"]  # one object, nothing beside it
    assert dr.head_object(Bucket="dr-copy", Key=keys(dr, "dr-copy")[0])["ContentLength"] > 1024 * 1024
    assert read_plan(storage, location, digest) == plan
    with pytest.raises(CopyInputError, match="not the plan this run was given"):
        read_plan(storage, location, "sha256:" + "0" * 64)


def test_distcp_takes_a_plan_from_s3_only_with_its_digest(dr, tmp_path: Path) -> None:
    write_tree(tmp_path / "src", {"part-0": b"p0", "part-1": b"p1"})
    location = plan_location("s3://dr-copy/warehouse", "data", "orders", "run-2")
    digest = write_plan(Storage(S3Settings.from_environment()), location,
                        single_unit_plan(uri(tmp_path / "src"), uri(tmp_path / "dst")))
    env = job_environment(tmp_path)

    def distcp(given: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(HIVECAT), "distcp", "--plan", location, "--plan-digest", given, "--engine",
                               "local", "--output", "json"], capture_output=True, text=True, env=env, timeout=120)

    refused = distcp("sha256:" + "0" * 64)
    assert refused.returncode == 2 and refused.stdout == "" and len(refused.stderr.splitlines()) == 1
    assert digest in refused.stderr and not (tmp_path / "dst").exists()

    done = distcp(digest)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["files_copied"] == 2
    assert read_tree(tmp_path / "dst") == {"part-0": b"p0", "part-1": b"p1"}


def test_on_hdfs_a_plan_is_renamed_into_place_and_a_rewrite_replaces_it(hdfs_cluster: HdfsCluster) -> None:
    settings = WebHdfsSettings(((hdfs_cluster.authority, f"http://127.0.0.1:{hdfs_cluster.http_port}"),), "hivecat")
    storage = Storage(webhdfs=settings)
    location = plan_location(hdfs_cluster.uri, "data", "orders", "run-3")
    first = single_unit_plan(f"{hdfs_cluster.uri}/warehouse/t", "s3://dr-copy/warehouse/t")
    second = single_unit_plan(f"{hdfs_cluster.uri}/warehouse/u", "s3://dr-copy/warehouse/u")
    digest = write_plan(storage, location, first)
    assert read_plan(storage, location, digest) == first
    again = write_plan(storage, location, second)
    assert read_plan(storage, location, again) == second
    with pytest.raises(CopyInputError, match="not the plan this run was given"):
        read_plan(storage, location, digest)
    directory = parse_uri(location).parent
    names = [info.base_name for info in storage.filesystem(directory).get_file_info(
        pafs.FileSelector(directory.path))]
    assert names == ["run-3.json"]
