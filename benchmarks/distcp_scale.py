"""The copy engine at the size of real tables: `hivecat distcp --plan` over 1,000, 10,000 and 100,000 units.

Each unit is one partition directory of one table, as a TableReplica's plan has them: either one small file
(1 KiB, shape `files`) or empty (shape `empty`). For each size and shape the source tree and a plan are
written once, then the real command a copy Job runs (`hivecat distcp --plan P --output json`, its own
process) copies every unit for the first time into a fresh target and is run again with nothing changed;
local -> local with the local engine and with the Spark engine (`--engine spark`: a local Spark, its JVM
started by the command), local -> moto S3 (its own moto server, fresh bucket per copy), and local -> HDFS (a
MiniDFSCluster from Hadoop's jars, through WebHDFS, at smaller sizes: see HDFS_SIZES). Every run's JSON
summary is checked before its time counts (succeeded, every unit done on the first copy, nothing copied on
the rerun).

Figures per target, shape and size: seconds, microseconds per unit (flat across sizes means linear in the
number of units), the process's peak RSS (its own VmHWM, read while it runs; not the Spark engine's JVM), for local -> local
how long until the first unit was committed (`*_first_unit_committed_s`: its manifest appeared; units are
copied a window at a time), for S3 the requests per unit the server
answered (`*_requests_per_unit`, from its log), and for local -> local `cp -r` of the same
source tree, timed the same way (`*_vs_cp`: cp seconds / hivecat seconds, higher is better). `*_growth` is
the per-unit time at the largest size over the smallest: 1.0 is linear. For HDFS, the floor a unit's two
file writes (its file and its manifest) stand on: how long the cluster takes to create one 1 KiB file
through WebHDFS (`hdfs_create_s`, one at a time) and how many it creates a second with 8 at a time
(`hdfs_creates_per_s`).

    python benchmarks/distcp_scale.py            # 1k, 10k, 100k units (HDFS 200, 1k); S3 makes it the longest
    python benchmarks/distcp_scale.py --no-s3    # local, Spark and HDFS: about 25 minutes on 2 CPUs
    python benchmarks/distcp_scale.py --sizes 1000,10000 --no-s3 --no-hdfs --no-spark
    python benchmarks/distcp_scale.py --small    # 10 and 40 units: checks that everything works

Speed is never asserted. The last stdout line is one JSON object of figures.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.local.moto import moto_server

FULL, SMALL = (1_000, 10_000, 100_000), (10, 40)
# A MiniDFSCluster closes some 15-20 small files a second (one datanode), each unit writing one or two: at 100,000
# units one shape would take hours. Its per-unit figures at these sizes show whether that grows.
HDFS_SIZES = (200, 1_000)
SHAPES = ("files", "empty")
FILE_BYTES = 1024
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def label(count: int) -> str:
    return f"{count // 1000}k" if count >= 1000 else str(count)


def write_table(root: Path, units: int, with_files: bool) -> Path:
    """`units` partition directories under root/src (one 1 KiB file each, or none)."""
    source = root / "src"
    payload = os.urandom(FILE_BYTES)
    for index in range(units):
        partition = source / f"dt={index:07d}"
        partition.mkdir(parents=True)
        if with_files:
            (partition / "part-00000.orc").write_bytes(payload)
    return source


def write_plan(path: Path, source: Path, target_uri: str, units: int) -> None:
    document = {"version": 1, "units": [{"id": f"dt={i:07d}", "source": f"file://{source}/dt={i:07d}",
                                         "target": f"{target_uri}/dt={i:07d}"} for i in range(units)]}
    path.write_text(json.dumps(document))


def peak_rss_kib(pid: int) -> int | None:
    """VmHWM of a running process: the peak resident set of its own memory since its exec, in KiB (None once
    it has exited)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")), None)
    except OSError:
        return None


def timed(command: list[str], env: dict[str, str] | None = None,
          watch: Path | None = None) -> tuple[float, float, str, float | None]:
    """(seconds, peak RSS in MiB, stdout, seconds until `watch` appeared or None) of one process, which must
    succeed (the output goes through files, so no reader thread holds it up). `watch` is looked for, and the
    process's VmHWM read, every 10 ms while it runs: not wait4's ru_maxrss, which for a child started with
    vfork (as subprocess starts one) is at least this process's own peak, whatever the child's."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        began = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, text=True)
        appeared: list[float] = []
        peak = [0]
        done = threading.Event()

        def look() -> None:
            while True:
                peak[0] = max(peak[0], peak_rss_kib(process.pid) or 0)
                if watch is not None and not appeared and watch.exists():
                    appeared.append(time.perf_counter() - began)
                if done.wait(0.01):
                    return

        watcher = threading.Thread(target=look, daemon=True)
        watcher.start()
        _, status, _ = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - began
        done.set()
        watcher.join()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0), err.seek(0)
        if process.returncode != 0:
            raise AssertionError(f"{' '.join(command[:3])} ... exited {process.returncode}: {err.read()[-2000:]}")
        return seconds, peak[0] / 1024, out.read(), appeared[0] if appeared else None


def check(summary_text: str, units: int, copied: int) -> None:
    summary = json.loads(summary_text)
    totals = summary["totals"]
    done = totals["units_done"] + totals["units_skipped"]
    if summary["status"] != "succeeded" or done != units or totals["files_copied"] != copied:
        raise AssertionError(f"the run did not do what it should: {summary['status']} {totals}")


def fresh(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.sync()


@contextmanager
def s3_target(workdir: Path, enabled: bool) -> Iterator[dict[str, str] | None]:
    if not enabled:
        yield None
        return
    with moto_server(workdir / "moto.log") as endpoint:
        yield {**os.environ, **S3_ENV, "AWS_ENDPOINT_URL": endpoint}


def requests_logged(workdir: Path) -> int:
    """How many requests the moto server has answered so far (a line each in its log)."""
    with open(workdir / "moto.log", "rb") as log:
        return sum(1 for line in log if b" HTTP/1.1" in line)


def new_bucket(env: dict[str, str], name: str) -> None:
    import boto3
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing").create_bucket(Bucket=name)


@dataclass(frozen=True)
class Target:
    """Where one run copies to, and how."""

    kind: str                          # local | spark | s3 | hdfs
    uri: str
    env: dict[str, str] | None = None  # the command's environment (None: this process's)
    args: tuple[str, ...] = ()         # more of its arguments
    dst: Path | None = None            # a local target's directory: made fresh, watched, compared with cp -r


def targets_for(root: Path, shape: str, units: int, s3: dict[str, str] | None,
                hdfs: tuple[str, dict[str, str]] | None, spark: bool, local: bool) -> list[Target]:
    found = [Target("local", f"file://{root}/dst", dst=root / "dst")] if local else []
    if spark:
        found.append(Target("spark", f"file://{root}/dst-spark", args=("--engine", "spark"), dst=root / "dst-spark"))
    if s3 is not None:
        found.append(Target("s3", f"s3://b-{shape}-{units}/table", s3))
    if hdfs is not None:
        found.append(Target("hdfs", f"{hdfs[0]}/{shape}-{units}/table", hdfs[1]))
    return found


def measure(hivecat: str, workdir: Path, units: int, shape: str, local: bool, s3: dict[str, str] | None,
            hdfs: tuple[str, dict[str, str]] | None, spark: bool) -> dict[str, float]:
    """One size and shape on the targets given (`local`: the local engine's too)."""
    figures: dict[str, float] = {}
    root = workdir / f"{shape}-{units}"
    source = write_table(root, units, shape == "files")
    copied = units if shape == "files" else 0
    for target in targets_for(root, shape, units, s3, hdfs, spark, local):
        plan = root / f"plan-{target.kind}.json"
        write_plan(plan, source, target.uri, units)
        if target.kind == "s3":
            new_bucket(target.env, target.uri.split("/")[2])
        if target.dst is not None:
            fresh(target.dst)
        key = f"{target.kind}_{shape}_{label(units)}"
        command = [hivecat, "distcp", "--plan", str(plan), "--output", "json", *target.args]
        for run, files in (("first", copied), ("rerun", 0)):
            logged = requests_logged(workdir) if target.kind == "s3" else 0
            first_unit = target.dst / "dt=0000000" / MANIFEST_NAME if target.dst and run == "first" else None
            seconds, rss, out, committed = timed(command, target.env, first_unit)
            check(out, units, files)
            figures.update({f"{key}_{run}_s": seconds, f"{key}_{run}_us_per_unit": seconds / units * 1e6,
                            f"{key}_{run}_peak_rss_mib": rss})
            if first_unit is not None:  # when readers can see the first unit: copying began before it
                figures[f"{key}_first_unit_committed_s"] = committed if committed is not None else seconds
            if target.kind == "s3":
                figures[f"{key}_{run}_requests_per_unit"] = (requests_logged(workdir) - logged) / units
        if target.dst is not None:
            if not (target.dst / "dt=0000000" / MANIFEST_NAME).is_file():
                raise AssertionError("no manifest in the first unit's target")
            fresh(root / "cp")
            cp_seconds, _, _, _ = timed(["cp", "-r", str(source), str(root / "cp")])
            figures[f"{key}_cp_s"] = cp_seconds
            figures[f"{key}_first_vs_cp"] = cp_seconds / figures[f"{key}_first_s"]
            fresh(target.dst)
        log(f"  {key}: first {figures[f'{key}_first_s']:.2f} s ({figures[f'{key}_first_us_per_unit']:.0f} us/unit, "
            f"{figures[f'{key}_first_peak_rss_mib']:.0f} MiB"
            + (f", first unit committed at {figures[f'{key}_first_unit_committed_s']:.2f} s" if target.dst else "")
            + f"), rerun {figures[f'{key}_rerun_s']:.2f} s "
            f"({figures[f'{key}_rerun_us_per_unit']:.0f} us/unit)"
            + (f", cp -r {figures[f'{key}_cp_s']:.2f} s" if target.dst else "")
            + (f", S3 requests per unit {figures[f'{key}_first_requests_per_unit']:.1f} first, "
               f"{figures[f'{key}_rerun_requests_per_unit']:.1f} rerun" if target.kind == "s3" else ""))
    shutil.rmtree(root, ignore_errors=True)
    return figures


def growth(figures: dict[str, float], sizes: tuple[int, ...]) -> dict[str, str]:
    """`*_growth` for each target, shape and run measured at two sizes or more: per-unit time at its largest
    size over its smallest. Returns a line describing each."""
    described = {}
    measured = sorted(set(sizes))
    for head in {"_".join(k.split("_")[:2]) for k in figures if k.endswith("_us_per_unit")}:  # target_shape
        for run in ("first", "rerun"):
            at = [n for n in measured if f"{head}_{label(n)}_{run}_us_per_unit" in figures]
            if len(at) < 2:
                continue
            small, large = (f"{head}_{label(n)}_{run}_us_per_unit" for n in (at[0], at[-1]))
            figures[f"{head}_{run}_growth"] = figures[large] / figures[small]
            described[f"{head}_{run}"] = f"per-unit time at {label(at[-1])} / at {label(at[0])} units"
    return described


@contextmanager
def hdfs_target(workdir: Path, enabled: bool) -> Iterator[tuple[str, dict[str, str]] | None]:
    """A MiniDFSCluster for the run: (its hdfs:// URI, the environment that points hivecat at its WebHDFS)."""
    if not enabled:
        yield None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.hdfs import HdfsCluster  # the tests' cluster, reused (as relocate_support/pg_rows does)

    cluster = HdfsCluster(workdir / "hdfs")
    cluster.start(format=True)
    try:
        yield cluster.uri, {**os.environ, "HIVECAT_WEBHDFS_ENDPOINTS":
                            f"{cluster.authority}=http://127.0.0.1:{cluster.http_port}"}
    finally:
        cluster.stop()


def hdfs_create_figures(env: dict[str, str], files: int) -> dict[str, float]:
    """The cluster's own pace for what every unit does at least once (its manifest) and a one-file unit
    twice: create a 1 KiB file through WebHDFS (the namenode's CREATE, then the datanode's PUT, which returns
    once the file is closed). One at a time (median seconds), then `files` of them 8 at a time."""
    import requests

    endpoint = env["HIVECAT_WEBHDFS_ENDPOINTS"].split("=", 1)[1] + "/webhdfs/v1/floor"
    payload, user = os.urandom(FILE_BYTES), getpass.getuser()

    def create(index: int) -> float:
        began = time.perf_counter()
        with requests.Session() as session:
            redirect = session.put(f"{endpoint}/f{index}?op=CREATE&user.name={user}", allow_redirects=False)
            session.put(redirect.headers["Location"], data=payload).raise_for_status()
        return time.perf_counter() - began

    one_at_a_time = sorted(create(index) for index in range(10))
    began = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(10, 10 + files)))
    return {"hdfs_create_s": one_at_a_time[len(one_at_a_time) // 2],
            "hdfs_creates_per_s": files / (time.perf_counter() - began)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="10 and 40 units: checks that everything works")
    parser.add_argument("--sizes", help="comma-separated unit counts (default 1000,10000,100000)")
    parser.add_argument("--hdfs-sizes", help="comma-separated unit counts for HDFS (default 200,1000)")
    parser.add_argument("--no-s3", action="store_true", help="no local -> S3")
    parser.add_argument("--no-hdfs", action="store_true", help="no local -> HDFS")
    parser.add_argument("--no-spark", action="store_true", help="no Spark engine")
    parser.add_argument("--workdir", type=Path, help="where to write the trees (default: a temp dir under /tmp)")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else SMALL if args.small else FULL
    hdfs_sizes = () if args.no_hdfs else tuple(int(s) for s in args.hdfs_sizes.split(",")) if args.hdfs_sizes \
        else SMALL if args.small else HDFS_SIZES
    hivecat = shutil.which("hivecat", path=str(Path(sys.executable).parent)) or "hivecat"
    workdir = Path(tempfile.mkdtemp(prefix="hivecat-bench-scale-", dir=args.workdir))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still removes its trees (finally)
    figures: dict = {"cpus": os.cpu_count() or 0, "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
                     "sizes": ",".join(map(str, sizes)), "hdfs_sizes": ",".join(map(str, hdfs_sizes)),
                     "file_bytes": FILE_BYTES}
    try:
        with s3_target(workdir, not args.no_s3) as s3:
            for units in sizes:
                for shape in SHAPES:
                    figures.update(measure(hivecat, workdir, units, shape, True, s3, None, not args.no_spark))
        with hdfs_target(workdir, bool(hdfs_sizes)) as hdfs:  # afterwards: its JVM runs beside nothing else
            if hdfs is not None:
                figures.update(hdfs_create_figures(hdfs[1], min(200, max(hdfs_sizes))))
                for units in hdfs_sizes:
                    for shape in SHAPES:
                        figures.update(measure(hivecat, workdir, units, shape, False, None, hdfs, False))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    described = growth(figures, tuple(set(sizes) | set(hdfs_sizes)))
    figures["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    figures = {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}
    for key in sorted(described):
        print(f"{key}: {described[key]} = {figures[key + '_growth']:.2f}")
    if "hdfs_create_s" in figures:
        print(f"HDFS: one 1 KiB file created in {figures['hdfs_create_s']:.3f} s, "
              f"{figures['hdfs_creates_per_s']:.1f} a second 8 at a time")
    print(f"{figures['cpus']} CPUs, 1-min load average {figures['load_avg_1m_at_start']} at start, "
          f"{figures['load_avg_1m_at_end']} at the end")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
