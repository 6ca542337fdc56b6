"""The real HDFS fixture: WebHDFS on 127.0.0.1, its namespace kept across a restart, DistCp from Maven Central."""

from __future__ import annotations

from pathlib import Path

from support.hdfs import HdfsCluster, hadoop_jar_dir, hdfs_cluster, run_distcp  # noqa: F401  (fixtures by name)


def test_restart_on_another_port_keeps_the_namespace(hdfs_cluster: HdfsCluster):
    hdfs_cluster.webhdfs("MKDIRS", "/smoke/kept", method="PUT")
    assert hdfs_cluster.exists("/smoke/kept")
    old_port = hdfs_cluster.rpc_port

    hdfs_cluster.stop()
    hdfs_cluster.start()  # same data directory, new free ports, no format

    assert hdfs_cluster.rpc_port != old_port
    assert hdfs_cluster.exists("/smoke/kept")
    assert [s["pathSuffix"] for s in hdfs_cluster.list_status("/smoke")] == ["kept"]
    print(f"HDFS start seconds (format, restart): {hdfs_cluster.start_seconds}")


def test_distcp_copies_local_files_into_hdfs_and_within_it(hdfs_cluster: HdfsCluster, hadoop_jar_dir: Path,
                                                          tmp_path: Path):
    source = tmp_path / "local"
    (source / "dt=2026-11-01").mkdir(parents=True)
    (source / "dt=2026-11-01" / "part-0.txt").write_text("one\n")
    (source / "top.txt").write_text("top\n")

    into = run_distcp([source.as_uri(), f"{hdfs_cluster.uri}/copied"], jars=hadoop_jar_dir, cwd=tmp_path)
    assert into.returncode == 0, into.stderr[-4000:]
    within = run_distcp([f"{hdfs_cluster.uri}/copied", f"{hdfs_cluster.uri}/again"], jars=hadoop_jar_dir,
                        cwd=tmp_path)
    assert within.returncode == 0, within.stderr[-4000:]

    for root in ("/copied", "/again"):
        assert hdfs_cluster.read(f"{root}/top.txt") == b"top\n"
        assert hdfs_cluster.read(f"{root}/dt=2026-11-01/part-0.txt") == b"one\n"
