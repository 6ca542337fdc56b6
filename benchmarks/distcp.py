"""Copy speed: `hivecat distcp` (local and spark engines, --verify size and checksum) vs `cp -r` and a
plain Python thread pool, local -> local; and a no-change rerun vs a plain recursive listing.

One run writes the data once (2,000 x 256 KiB files, 4 x 256 MiB files, and a 20,000-file tree for the
rerun), reads it once so the page cache is warm, then times each contender copying each shape into a
fresh target, median of 3, contenders interleaved round by round so a busy machine slows them alike.
The previous target is deleted and dirty pages are flushed (sync) outside the timed region. Every
copy is checked before its time counts: same files with the same sizes, a sample byte-equal, and
for hivecat a succeeded run summary and a manifest listing every file.

hivecat runs in-process through the function the CLI calls (`Copier.run`), so the Spark session is
created once and timed on its own (`spark_start_s`). The CLI's own wall time on the small shape is
measured once (`small_cli_s`, with `cli_startup_s` for `hivecat --help`): interpreter and import
overhead.

The plan's overlap check (no target under a source, no nested targets) is timed in-process on plans
of one table's partitions, S3 to S3: 100,000 and 1,000,000 units (`overlap_check_100k_s`,
`overlap_check_1m_s`); with --small, 10,000 and 100,000 (`overlap_check_10k_s`, `overlap_check_100k_s`).

Targets (issue 32, raised from issue 4's 0.7x and 2x): local engine, --verify size >= 1.0x `cp -r` throughput on
both shapes, --verify checksum >= 0.9x; spark engine, --verify size >= 0.8x `cp -r` excluding session start; the
no-change rerun <= 1.5x the plain listing (os.scandir + stat of both trees). Ratios are throughput relative to
`cp -r` (cp seconds / contender seconds): higher is better.

Hadoop DistCp (3.4.1, the jars scripts/fetch-maven.sh fetches) is a contender too: one JVM per copy on
MapReduce's local runner, -m = local map slots = CPUs, file:// -> file://, CRC checks on; the same shapes
and checks (its .NAME.crc sidecars aside), and `-update` over the no-change trees. Its fixed cost is
timed apart as a copy of an empty directory (`distcp_jvm_start_s`). `*_over_distcp` are hivecat seconds /
DistCp seconds: lower is better. --no-distcp leaves it out (`distcp_skipped`).

    python benchmarks/distcp.py            # full size; about 15 minutes on 2 shared CPUs (DistCp included)
    python benchmarks/distcp.py --small    # seconds; checks that everything works
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import hivecat.copy as copy_engine
from hivecat.copy import Copier, CopyOptions, LocalEngine, SparkEngine, Unit, single_unit_plan
from hivecat.copy.engines import default_session
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.plan import check_overlaps
from hivecat.copy.storage import Location, parse_uri
from hivecat.copy.transfer import run_task
from hivecat.local.hadoop import distcp_command, hadoop_jars
from hivecat.locations import schemes as copy_schemes

KIB, MIB = 1024, 1024 * 1024
WRITE_CHUNK = 4 * MIB


@dataclass(frozen=True)
class Sizes:
    small_files: int
    small_file_bytes: int
    large_files: int
    large_file_bytes: int
    noop_files: int
    repeat: int
    overlap_units: tuple[int, ...]
    distcp_skipped: bool = False  # Hadoop DistCp left out (the JSON's `distcp_skipped`)


FULL = Sizes(2000, 256 * KIB, 4, 256 * MIB, 20_000, 3, (100_000, 1_000_000))
SMALL = Sizes(200, 16 * KIB, 2, 4 * MIB, 500, 1, (10_000, 100_000))

# (contender, target): its throughput relative to cp -r (cp seconds / its seconds), higher is better
COPY_TARGETS = (("local", 1.0), ("local_checksum", 0.9), ("spark", 0.8))
NOOP_TARGET = 1.5  # rerun seconds / listing seconds, lower is better


def parse_args(argv: list[str] | None = None) -> tuple[Sizes, Path | None, bool]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a quick run at small sizes, one repetition")
    parser.add_argument("--workdir", type=Path, help="where to write the data (default: a temp dir under /tmp)")
    parser.add_argument("--repeat", type=int, help="repetitions per contender (median reported)")
    parser.add_argument("--profile", action="store_true",
                        help="then print (to stderr) cProfile's top functions for one copy of each shape in each "
                             "mode, file tasks run serially so the profiler sees them, and one no-change rerun")
    parser.add_argument("--no-distcp", action="store_true",
                        help="leave Hadoop DistCp out (no JDK 17 or no Hadoop jars); the JSON says distcp_skipped")
    args = parser.parse_args(argv)
    sizes = SMALL if args.small else FULL
    if args.no_distcp:
        sizes = Sizes(**{**sizes.__dict__, "distcp_skipped": True})
    if args.repeat is not None:
        if args.repeat < 1:
            parser.error("--repeat must be at least 1")
        sizes = Sizes(**{**sizes.__dict__, "repeat": args.repeat})
    return sizes, args.workdir, args.profile


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- data ----------------------------------------------------------------------------------------------


def write_files(root: Path, count: int, size: int, per_directory: int | None = None) -> Path:
    """`count` files of `size` random bytes (each different), optionally spread over subdirectories."""
    for index in range(count):
        directory = root / f"d{index // per_directory:03d}" if per_directory else root
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / f"part-{index:05d}.orc", "wb") as out:
            left = size
            while left:
                out.write(os.urandom(min(left, WRITE_CHUNK)))
                left -= min(left, WRITE_CHUNK)
    return root


def tree(root: Path) -> dict[str, int]:
    """Every data file below root (without hivecat's manifest, nor the `.NAME.crc` sidecars Hadoop's
    LocalFileSystem writes beside each file) by relative path, with its size."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            if relative != MANIFEST_NAME and not is_crc_sidecar(name):
                found[relative] = os.path.getsize(path)
    return found


def is_crc_sidecar(name: str) -> bool:
    return name.startswith(".") and name.endswith(".crc")


def uri(path: Path) -> str:
    """The file:// URI `hivecat distcp` takes for a local path (URIs only; the path literal, not %-escaped)."""
    return f"file://{path}"


def warm(root: Path) -> None:
    """Read every file once so all contenders start from the page cache."""
    for relative in tree(root):
        with open(root / relative, "rb") as stream:
            while stream.read(WRITE_CHUNK):
                pass


def fresh(target: Path) -> None:
    """Outside the timed region: no previous target or staging, and no dirty pages left to flush."""
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f"{STAGING_PREFIX}*"):
        shutil.rmtree(stale, ignore_errors=True)
    os.sync()


def engine_fingerprint() -> str:
    """A digest of the copy engine's sources (and of the scheme table it imports). Spark's Python workers
    import them when their first task runs, so an edit during the run would mix versions: the run then
    says so and exits 1."""
    package = Path(copy_engine.__file__).parent
    digest = hashlib.sha256()
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.json"), Path(copy_schemes.__file__)]):
        digest.update(path.relative_to(package.parent).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


# --- contenders ----------------------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    copy: Callable[[Path, Path], object]     # (source, fresh target) -> what check() gets
    check: Callable[[Path, Path, object], None] = lambda source, target, result: None


def cp_r(source: Path, target: Path) -> None:
    subprocess.run(["cp", "-r", str(source), str(target)], check=True)


def thread_pool(workers: int) -> Callable[[Path, Path], None]:
    """The plain-Python baseline: shutil.copyfile (sendfile) on a thread pool, no checks."""
    def copy(source: Path, target: Path) -> None:
        with ThreadPoolExecutor(workers) as pool:
            futures = []
            for directory, _, names in os.walk(source):
                into = target / os.path.relpath(directory, source)
                into.mkdir(parents=True, exist_ok=True)
                futures += [pool.submit(shutil.copyfile, os.path.join(directory, n), into / n) for n in names]
            for future in futures:
                future.result()
    return copy


def hivecat(engine: Callable[[], object], verify: str) -> Callable[[Path, Path], object]:
    """What `hivecat distcp --from SOURCE --to TARGET --engine E --verify V` runs, in this process."""
    def copy(source: Path, target: Path):
        return Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(verify=verify), engine=engine()).run()
    return copy


def hivecat_succeeded(verify: str) -> Callable[[Path, Path, object], None]:
    """hivecat's own account must match: a succeeded summary, every file in the manifest, no staging."""
    def check(source: Path, target: Path, summary) -> None:
        files = tree(source)
        totals = summary.totals()
        if summary.status != "succeeded" or totals["files_copied"] != len(files) \
                or totals["bytes_copied"] != sum(files.values()):
            raise AssertionError(f"hivecat run did not copy everything: {summary.status} {totals}")
        manifest = json.loads((target / MANIFEST_NAME).read_text())
        listed = {f["path"]: f["size"] for f in manifest["files"]}
        if listed != files:
            raise AssertionError("the manifest does not list exactly the source's files and sizes")
        if verify == "checksum" and not all(f["checksum"] for f in manifest["files"]):
            raise AssertionError("--verify checksum left files without a checksum in the manifest")
        if list(target.parent.glob(f"{STAGING_PREFIX}*")):
            raise AssertionError("staging left beside the target")
    return check


class HadoopDistCp:
    """`hadoop distcp` (org.apache.hadoop.tools.DistCp 3.4.1 from scripts/fetch-maven.sh's jars) on MapReduce's
    local runner, file:// -> file://, as many map tasks (-m) as concurrent local maps as CPUs; CRC checks on
    (no -skipcrccheck). One JVM per copy: its start is in every figure and measured apart (`jvm_start`)."""

    def __init__(self, workdir: Path, maps: int) -> None:
        self.jars = hadoop_jars()
        self.workdir = workdir
        self.maps = maps
        (workdir / "hadoop-tmp").mkdir(parents=True, exist_ok=True)

    def run(self, *args: str) -> dict[str, int]:
        """DistCp's counters (Files Copied, Files Skipped, Bytes Copied, ...) of a successful run."""
        generic = {"mapreduce.framework.name": "local", "mapreduce.local.map.tasks.maximum": str(self.maps),
                   "hadoop.tmp.dir": str(self.workdir / "hadoop-tmp")}
        command = distcp_command([*(a for k, v in generic.items() for a in ("-D", f"{k}={v}")),
                                  "-m", str(self.maps), *args], self.jars)
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.workdir, stdin=subprocess.DEVNULL,
                              timeout=1800)
        if done.returncode != 0:
            raise AssertionError(f"DistCp {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
        return {name: int(value) for name, value in
                re.findall(r"^\s*((?:Files|Bytes) [A-Za-z]+)=(\d+)\s*$", done.stdout + done.stderr, re.M)}

    def copy(self, source: Path, target: Path) -> dict[str, int]:
        return self.run(uri(source), uri(target))

    @staticmethod
    def check(source: Path, target: Path, counters: dict[str, int]) -> None:
        """DistCp's own account must match, and LocalFileSystem wrote a CRC sidecar for every file."""
        files = tree(source)
        if (counters.get("Files Copied"), counters.get("Bytes Copied")) != (len(files), sum(files.values())):
            raise AssertionError(f"DistCp did not copy everything: {counters}")
        for relative in files:
            sidecar = (target / relative).with_name(f".{Path(relative).name}.crc")
            if not sidecar.is_file():
                raise AssertionError(f"no CRC sidecar {sidecar}")

    def jvm_start(self, empty: Path, target: Path, repeat: int) -> float:
        """Median seconds of DistCp copying an empty directory: JVM start, Hadoop's classes, the local job
        (submission, listing, commit) and exit — the fixed cost inside every DistCp figure."""
        empty.mkdir(parents=True, exist_ok=True)
        seconds = []
        for _ in range(repeat):
            fresh(target)
            began = time.perf_counter()
            self.run(uri(empty), uri(target))
            seconds.append(time.perf_counter() - began)
        fresh(target)
        return statistics.median(seconds)


def check_copy(source: Path, target: Path, sample: int, seed: int) -> None:
    """Same files with the same sizes; `sample` of them byte-equal."""
    expected, found = tree(source), tree(target)
    if found != expected:
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        raise AssertionError(f"{target}: {len(found)} files, {sum(found.values())} bytes; expected "
                             f"{len(expected)}, {sum(expected.values())} (missing {missing[:3]}, extra {extra[:3]})")
    for relative in random.Random(seed).sample(sorted(expected), min(sample, len(expected))):
        if not filecmp.cmp(source / relative, target / relative, shallow=False):
            raise AssertionError(f"{target / relative} differs from the source")


def time_contenders(contenders: list[Contender], source: Path, target: Path, repeat: int,
                    sample: int) -> dict[str, float]:
    """Median seconds per contender; rounds interleave the contenders."""
    seconds: dict[str, list[float]] = {c.name: [] for c in contenders}
    for round_ in range(repeat):
        for contender in contenders:
            fresh(target)
            began = time.perf_counter()
            result = contender.copy(source, target)
            elapsed = time.perf_counter() - began
            check_copy(source, target, sample, seed=round_)
            contender.check(source, target, result)
            seconds[contender.name].append(elapsed)
            log(f"  {source.name} round {round_ + 1}: {contender.name:<16} {elapsed:8.3f} s")
    fresh(target)
    return {name: statistics.median(values) for name, values in seconds.items()}


def spark_empty_job(session, partitions: int) -> float:
    """Median of 3 jobs that do nothing in as many Python tasks as the spark engine schedules (4 per
    core): the fixed cost every spark-engine copy pays on top of its I/O."""
    seconds = []
    for _ in range(3):
        began = time.perf_counter()
        session.sparkContext.parallelize(range(partitions), partitions).map(lambda x: x).collect()
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


# --- no-change rerun -----------------------------------------------------------------------------------


def scan_with_stat(root: str) -> int:
    """The floor: a plain recursive listing with a stat of every file."""
    count = 0
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                count += scan_with_stat(entry.path)
            else:
                entry.stat(follow_symlinks=False)
                count += 1
    return count


def noop_figures(source: Path, target: Path, files: int, repeat: int,
                 distcp: HadoopDistCp | None) -> dict[str, float]:
    Copier(single_unit_plan(uri(source), uri(target)), CopyOptions(), engine=LocalEngine()).run()
    before = (target / MANIFEST_NAME).stat().st_mtime_ns
    rerun, listing, distcp_rerun = [], [], []
    for round_ in range(max(repeat, 3)):  # cheap: always a median of at least 3 (DistCp: `repeat`)
        if distcp is not None and round_ < repeat:
            began = time.perf_counter()
            counters = distcp.run("-update", uri(source), uri(target))
            distcp_rerun.append(time.perf_counter() - began)
            log(f"  noop round {round_ + 1}: distcp -update   {distcp_rerun[-1]:8.3f} s")
            if (counters.get("Files Copied", 0), counters.get("Files Skipped")) != (0, files):
                raise AssertionError(f"the DistCp -update rerun was not a no-op: {counters}")
            if (target / MANIFEST_NAME).stat().st_mtime_ns != before or tree(target) != tree(source):
                raise AssertionError("the DistCp -update rerun changed the target")
        began = time.perf_counter()
        summary = hivecat(LocalEngine, "size")(source, target)
        rerun.append(time.perf_counter() - began)
        totals = summary.totals()
        if (summary.status, totals["files_copied"], totals["files_skipped"]) != ("succeeded", 0, files):
            raise AssertionError(f"the no-change rerun was not a no-op: {summary.status} {totals}")
        if (target / MANIFEST_NAME).stat().st_mtime_ns != before:
            raise AssertionError("the no-change rerun rewrote the unit")
        began = time.perf_counter()
        counted = scan_with_stat(str(source)) + scan_with_stat(str(target))
        listing.append(time.perf_counter() - began)
        if counted != 2 * files + 1:  # + the manifest
            raise AssertionError(f"the listing found {counted} files, expected {2 * files + 1}")
    figures = {"noop_rerun_s": statistics.median(rerun), "noop_listing_s": statistics.median(listing)}
    if distcp_rerun:
        figures["noop_distcp_s"] = statistics.median(distcp_rerun)
    return figures


# --- the plan's overlap check ----------------------------------------------------------------------


def partition_units(count: int) -> tuple[Unit, ...]:
    """One table's partitions, S3 to S3, in plan order; locations as parse_uri makes them (built
    directly: a million URI parses would take longer than the check)."""
    def unit(index: int) -> Unit:
        key = f"warehouse/sales.db/orders/dt=2020-01-01/shard={index:07d}"
        return Unit(f"shard={index}", Location("s3", "lake", f"lake/{key}"),
                    Location("s3", "replica", f"replica/{key}"))

    units = tuple(unit(i) for i in range(count))
    assert units[0].source == parse_uri("s3://lake/warehouse/sales.db/orders/dt=2020-01-01/shard=0000000/")
    return units


def count_label(count: int) -> str:
    return f"{count // 1_000_000}m" if count % 1_000_000 == 0 else f"{count // 1000}k"


def overlap_figures(counts: tuple[int, ...], repeat: int) -> dict[str, float]:
    """Median seconds of check_overlaps (what every plan goes through before the first byte)."""
    figures = {}
    for count in counts:
        units = partition_units(count)
        seconds = []
        for _ in range(repeat):
            began = time.perf_counter()
            check_overlaps(units)
            seconds.append(time.perf_counter() - began)
        figures[f"overlap_check_{count_label(count)}_s"] = statistics.median(seconds)
        log(f"  overlap check, {count:,} units: {figures[f'overlap_check_{count_label(count)}_s']:.3f} s")
        del units
    return figures


# --- the CLI, profiling --------------------------------------------------------------------------------


def cli_figures(source: Path, target: Path) -> dict[str, float]:
    """Wall time of the real command on the small shape, and of `hivecat --help` (startup alone)."""
    command = shutil.which("hivecat", path=str(Path(sys.executable).parent)) or "hivecat"
    began = time.perf_counter()
    subprocess.run([command, "--help"], check=True, capture_output=True)
    startup = time.perf_counter() - began
    fresh(target)
    began = time.perf_counter()
    done = subprocess.run([command, "distcp", "--from", uri(source), "--to", uri(target), "--engine", "local",
                           "--verify", "size", "--output", "json"], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - began
    check_copy(source, target, 16, seed=0)
    if json.loads(done.stdout)["status"] != "succeeded":
        raise AssertionError(f"hivecat distcp (CLI) failed: {done.stdout}")
    fresh(target)
    return {"small_cli_s": wall, "cli_startup_s": startup}


class SerialEngine:
    """For --profile only: runs the engines' own file task (`run_task`) on the calling thread, so that
    cProfile, which sees one thread, sees every task. Not a contender: its times are not reported."""

    name = "local"

    def execute(self, tasks, options, progress=None):
        return [run_task(task, options) for task in tasks]


def profile(what: str, action: Callable[[], object], prepare: Callable[[], None] = lambda: None) -> None:
    import cProfile
    import io
    import pstats

    prepare()
    profiler = cProfile.Profile()
    profiler.runcall(action)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
    log(f"--- cProfile: {what} (by own time)\n{out.getvalue()}")


# --- the run -------------------------------------------------------------------------------------------


def run(sizes: Sizes, workdir: Path, with_profile: bool) -> dict:
    figures: dict = {f"{shape}_{k}": v for shape in ("small", "large")
                     for k, v in (("files", getattr(sizes, f"{shape}_files")),
                                  ("file_bytes", getattr(sizes, f"{shape}_file_bytes")))}
    figures.update(noop_files=sizes.noop_files, repeat=sizes.repeat, cpus=os.cpu_count(),
                   load_avg_1m_at_start=round(os.getloadavg()[0], 2), engine_fingerprint=engine_fingerprint())
    began = time.perf_counter()
    shapes = {"small": write_files(workdir / "src" / "small", sizes.small_files, sizes.small_file_bytes),
              "large": write_files(workdir / "src" / "large", sizes.large_files, sizes.large_file_bytes)}
    noop_source = write_files(workdir / "src" / "noop", sizes.noop_files, 1 * KIB, per_directory=1000)
    for source in (*shapes.values(), noop_source):
        warm(source)
    log(f"data written and read: {time.perf_counter() - began:.1f} s")

    distcp = None
    figures["distcp_skipped"] = sizes.distcp_skipped
    if not sizes.distcp_skipped:
        distcp = HadoopDistCp(workdir, os.cpu_count() or 1)
        figures["distcp_maps"] = distcp.maps
        figures["distcp_jvm_start_s"] = distcp.jvm_start(workdir / "src" / "empty", workdir / "dst" / "empty",
                                                         sizes.repeat)
        log(f"DistCp of an empty directory (JVM start and a local job): {figures['distcp_jvm_start_s']:.2f} s")

    began = time.perf_counter()
    session = default_session(None)  # what `--engine spark` creates when no session is active
    figures["spark_start_s"] = time.perf_counter() - began
    try:
        began = time.perf_counter()  # the first job also starts the Python workers: reported apart
        session.sparkContext.parallelize(range(2), 2).map(lambda x: x).collect()
        figures["spark_first_job_s"] = time.perf_counter() - began
        figures["spark_parallelism"] = parallelism = session.sparkContext.defaultParallelism
        figures["spark_empty_job_s"] = spark_empty_job(session, 4 * parallelism)
        workers = LocalEngine().parallelism
        figures["local_parallelism"] = workers
        contenders = [
            Contender("cp", cp_r),
            Contender("pool", thread_pool(workers)),
            Contender("local", hivecat(LocalEngine, "size"), hivecat_succeeded("size")),
            Contender("local_checksum", hivecat(LocalEngine, "checksum"), hivecat_succeeded("checksum")),
            Contender("spark", hivecat(lambda: SparkEngine(session), "size"), hivecat_succeeded("size")),
            Contender("spark_checksum", hivecat(lambda: SparkEngine(session), "checksum"),
                      hivecat_succeeded("checksum")),
        ]
        if distcp is not None:
            contenders.append(Contender("distcp", distcp.copy, distcp.check))
        for shape, source in shapes.items():
            target = workdir / "dst" / shape
            sample = 16 if shape == "small" else 2
            medians = time_contenders(contenders, source, target, sizes.repeat, sample)
            figures.update({f"{shape}_{name}_s": seconds for name, seconds in medians.items()})
    finally:
        session.stop()
    figures.update(cli_figures(shapes["small"], workdir / "dst" / "cli"))
    figures.update(noop_figures(noop_source, workdir / "dst" / "noop", sizes.noop_files, sizes.repeat, distcp))
    figures.update(overlap_figures(sizes.overlap_units, sizes.repeat))
    figures["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    add_ratios(figures)
    figures["engine_changed_during_run"] = engine_fingerprint() != figures["engine_fingerprint"]
    if with_profile:  # after the figures: profiling slows what it watches
        for shape, source in shapes.items():
            target = workdir / "dst" / f"profile-{shape}"
            for verify in ("size", "checksum"):
                profile(f"{shape}, --verify {verify}, tasks serial on the profiled thread",
                        lambda: hivecat(SerialEngine, verify)(source, target), lambda: fresh(target))
        profile("no-change rerun", lambda: hivecat(LocalEngine, "size")(noop_source, workdir / "dst" / "noop"))
    # ratios to DistCp are far below 1: four significant digits rather than three decimals
    return {k: (float(f"{v:.4g}") if k.endswith("_over_distcp") else round(v, 3)) if isinstance(v, float) else v
            for k, v in figures.items()}


def add_ratios(figures: dict) -> None:
    for shape in ("small", "large"):
        cp = figures[f"{shape}_cp_s"]
        for name in ("pool", "local", "local_checksum", "spark", "spark_checksum"):
            figures[f"{shape}_{name}_vs_cp"] = cp / figures[f"{shape}_{name}_s"]
        bytes_ = figures[f"{shape}_files"] * figures[f"{shape}_file_bytes"]
        figures[f"{shape}_cp_mib_s"] = bytes_ / MIB / cp
    figures["noop_rerun_over_listing"] = figures["noop_rerun_s"] / figures["noop_listing_s"]
    if "noop_distcp_s" in figures:  # hivecat seconds / DistCp seconds: lower is better
        for shape in ("small", "large"):
            figures[f"{shape}_local_over_distcp"] = figures[f"{shape}_local_s"] / figures[f"{shape}_distcp_s"]
        figures["noop_rerun_over_distcp"] = figures["noop_rerun_s"] / figures["noop_distcp_s"]
    met = [figures[f"{shape}_{name}_vs_cp"] >= target for shape in ("small", "large") for name, target in COPY_TARGETS]
    met.append(figures["noop_rerun_over_listing"] <= NOOP_TARGET)
    figures["targets_met"] = sum(met)
    figures["targets_total"] = len(met)


def report(f: dict) -> None:
    for shape in ("small", "large"):
        size = f[f"{shape}_file_bytes"]
        label = f"{size // MIB} MiB" if size >= MIB else f"{size // KIB} KiB"
        print(f"{shape}: {f[f'{shape}_files']:,} x {label}, local -> local, median of {f['repeat']} "
              f"(cp -r {f[f'{shape}_cp_mib_s']:.0f} MiB/s)")
        print(f"  {'cp -r':<22} {f[f'{shape}_cp_s']:8.3f} s   1.00x")
        targets = dict(COPY_TARGETS)
        for name, label in (("pool", "thread pool"), ("local", "hivecat local size"),
                            ("local_checksum", "hivecat local checksum"), ("spark", "hivecat spark size"),
                            ("spark_checksum", "hivecat spark checksum")):
            ratio = f[f"{shape}_{name}_vs_cp"]
            target = targets.get(name)
            verdict = "" if target is None else f"  (target >= {target:.1f}x: {'met' if ratio >= target else 'MISSED'})"
            print(f"  {label:<22} {f[f'{shape}_{name}_s']:8.3f} s   {ratio:.2f}x{verdict}")
        if f"{shape}_distcp_s" in f:
            seconds = f[f"{shape}_distcp_s"]
            print(f"  {'hadoop distcp':<22} {seconds:8.3f} s   {f[f'{shape}_cp_s'] / seconds:.2f}x  "
                  f"({seconds - f['distcp_jvm_start_s']:.3f} s without its fixed cost; hivecat local / DistCp "
                  f"{f[f'{shape}_local_over_distcp']:.2f}x)")
    ratio = f["noop_rerun_over_listing"]
    print(f"no-change rerun over {f['noop_files']:,} files: hivecat {f['noop_rerun_s']:.3f} s, "
          f"os.scandir + stat of both trees {f['noop_listing_s']:.3f} s: {ratio:.2f}x "
          f"(target <= {NOOP_TARGET:g}x: {'met' if ratio <= NOOP_TARGET else 'MISSED'})")
    if "noop_distcp_s" in f:
        print(f"  DistCp -update on the same trees {f['noop_distcp_s']:.3f} s (hivecat / DistCp "
              f"{f['noop_rerun_over_distcp']:.2f}x); DistCp's fixed cost (an empty directory) "
              f"{f['distcp_jvm_start_s']:.2f} s, -m {f['distcp_maps']}")
    elif f["distcp_skipped"]:
        print("  (Hadoop DistCp left out: --no-distcp)")
    print(f"spark session start {f['spark_start_s']:.2f} s, first job {f['spark_first_job_s']:.2f} s "
          f"(not in the spark figures); an empty job of {4 * f['spark_parallelism']} tasks "
          f"{f['spark_empty_job_s']:.2f} s (in them); CLI on the small shape {f['small_cli_s']:.2f} s wall vs "
          f"{f['small_local_s']:.3f} s in-process (`hivecat --help`: {f['cli_startup_s']:.2f} s)")
    overlaps = ", ".join(f"{key[len('overlap_check_'):-len('_s')]} units {seconds:.2f} s"
                         for key, seconds in f.items() if key.startswith("overlap_check_"))  # smaller first
    print(f"plan overlap check (in-process): {overlaps}")
    print(f"targets met: {f['targets_met']} of {f['targets_total']}; {f['cpus']} CPUs, "
          f"1-min load average {f['load_avg_1m_at_start']} at start, {f['load_avg_1m_at_end']} at the end "
          f"(engine sources {f['engine_fingerprint']})")


def main(argv: list[str] | None = None) -> int:
    sizes, workdir_base, with_profile = parse_args(argv)
    if workdir_base is not None:
        workdir_base.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="hivecat-bench-distcp-", dir=workdir_base))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still removes its data (finally)
    try:
        figures = run(sizes, workdir, with_profile)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(figures)
    if figures["engine_changed_during_run"]:
        print("WARNING: hivecat/copy changed while the benchmark ran (Spark workers may have run the new code, "
              "the driver the old): these figures mix versions; run again")
    print(json.dumps(figures, sort_keys=True))
    return 1 if figures["engine_changed_during_run"] else 0


if __name__ == "__main__":
    sys.exit(main())
